//go:build !linux

package hugepages

// reserve does nothing: transparent huge pages are Linux's.
func reserve(int, bool) int { return 0 }
