//go:build !linux

package writeback

import (
	"errors"
	"os"
)

// startWriteback is not available here: the fsync writes everything.
func startWriteback(f *os.File, off, n int64) error {
	return errors.ErrUnsupported
}
