//go:build !linux

package hugepages

// reserve does nothing: transparent huge pages are Linux's.
func reserve(int) int { return 0 }
