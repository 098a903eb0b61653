package writeback

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback starts writing bytes [off, off+n) of f to its device without waiting for them
// (sync_file_range(2), SYNC_FILE_RANGE_WRITE).
func startWriteback(f *os.File, off, n int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.SyncFileRange(int(fd), off, n, unix.SYNC_FILE_RANGE_WRITE)
	}); err != nil {
		return err
	}
	return serr
}
