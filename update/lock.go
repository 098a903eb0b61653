package update

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockInfo is written into the lock file so that a second update can name the holder.
type lockInfo struct {
	PID      int    `json:"pid"`
	Host     string `json:"host"`
	UpdateID string `json:"update_id"`
	Started  string `json:"started"`
}

// lock holds <storage>/.lock with flock(2); the kernel releases it when the process dies, so a
// crashed update never leaves a stale lock.
type lock struct{ f *os.File }

// ErrLocked is returned (wrapped) when another update holds the storage.
var ErrLocked = fmt.Errorf("update: the storage is locked by another update")

func acquire(storage, updateID string) (*lock, error) {
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return nil, fmt.Errorf("update: creating the storage folder: %w", err)
	}
	path := filepath.Join(storage, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		var holder lockInfo
		b, _ := os.ReadFile(path)
		_ = json.Unmarshal(b, &holder)
		f.Close()
		return nil, fmt.Errorf("%w: pid %d on %s, update %s, started %s (lock file %s); wait for it to finish or stop it", ErrLocked, holder.PID, holder.Host, holder.UpdateID, holder.Started, path)
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(lockInfo{PID: os.Getpid(), Host: host, UpdateID: updateID, Started: time.Now().UTC().Format(time.RFC3339)})
	_ = f.Truncate(0)
	_, _ = f.WriteAt(b, 0)
	return &lock{f: f}, nil
}

func (l *lock) release() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}
