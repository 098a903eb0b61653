package update

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"tributary/spec"
)

// lockInfo is written into the lock file so that a second update can name the holder.
type lockInfo struct {
	PID      int    `json:"pid"`
	Host     string `json:"host"`
	UpdateID string `json:"update_id"`
	Started  string `json:"started"`
	// Command, for a lock held across updates (Hold), is the command that holds it ("dev",
	// "schedule"); UpdateID is then its latest update, which may have ended.
	Command string `json:"command,omitempty"`
}

// holderText says who holds a lock, from its file's info.
func (h lockInfo) holderText() string {
	if h.Command == "" {
		return fmt.Sprintf("pid %d on %s, update %s, started %s", h.PID, h.Host, h.UpdateID, h.Started)
	}
	latest := "no update yet"
	if h.UpdateID != "" && h.UpdateID != h.Command {
		latest = "its latest update " + strings.TrimSuffix(h.UpdateID, " ("+h.Command+")")
	}
	return fmt.Sprintf("`pipeline %s` holds it across its updates: pid %d on %s, since %s (%s)", h.Command, h.PID, h.Host, h.Started, latest)
}

// lock holds <storage>/.lock with flock(2); the kernel releases it when the process dies, so a
// crashed update never leaves a stale lock.
type lock struct{ f *os.File }

// ErrLocked is returned (wrapped) when another update holds the storage.
var ErrLocked = fmt.Errorf("update: the storage is locked by another update")

func acquire(storage, updateID string) (*lock, error) {
	return acquireFor(storage, updateID, "")
}

// acquireFor is acquire; command names a command that holds the lock across updates (Hold).
func acquireFor(storage, updateID, command string) (*lock, error) {
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return nil, fmt.Errorf("update: creating the storage folder: %w", err)
	}
	path := filepath.Join(storage, ".lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	if err := flockWait(f); err != nil {
		var holder lockInfo
		b, _ := os.ReadFile(path)
		_ = json.Unmarshal(b, &holder)
		f.Close()
		return nil, fmt.Errorf("%w: %s (lock file %s); wait for it to finish or stop it", ErrLocked, holder.holderText(), path)
	}
	host, _ := os.Hostname()
	b, _ := json.Marshal(lockInfo{PID: os.Getpid(), Host: host, UpdateID: updateID, Started: time.Now().UTC().Format(time.RFC3339), Command: command})
	_ = f.Truncate(0)
	_, _ = f.WriteAt(b, 0)
	return &lock{f: f}, nil
}

// lockWait is how long acquire waits for a held lock before it reports ErrLocked: a process
// killed with SIGKILL keeps its lock until the kernel has torn down its memory, a moment after
// the kill, and the update started next (a supervisor's restart) would otherwise fail.
var lockWait = time.Second

// flockWait takes the exclusive flock of f, trying again for up to lockWait while another
// process holds it.
func flockWait(f *os.File) error {
	deadline := time.Now().Add(lockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || err != syscall.EWOULDBLOCK || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (l *lock) release() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
}

// note rewrites the lock file to name the update now running under a lock held across updates.
func (l *lock) note(updateID string) {
	b, err := os.ReadFile(l.f.Name())
	var info lockInfo
	if err == nil {
		_ = json.Unmarshal(b, &info)
	}
	host, _ := os.Hostname()
	info.PID, info.Host, info.UpdateID = os.Getpid(), host, updateID
	if info.Started == "" {
		info.Started = time.Now().UTC().Format(time.RFC3339)
	}
	b, _ = json.Marshal(info)
	_ = l.f.Truncate(0)
	_, _ = l.f.WriteAt(b, 0)
}

// Held is the storage lock held by a long-running command (`pipeline dev`, `pipeline schedule`,
// continuous `pipeline run`) across the updates it runs: no other update, dev session or
// scheduler can use the storage meanwhile.
type Held struct {
	lk   *lock
	what string
}

// Hold takes the storage lock of p for a long-running command; what names it in the lock file
// (for example "schedule"). The error wraps ErrLocked and names the holder when the storage is
// taken. A lock left by a dead process is free: the kernel drops flock locks with their process.
func Hold(p *spec.Pipeline, what string) (*Held, error) {
	lk, err := acquireFor(p.Storage, "", what)
	if err != nil {
		return nil, err
	}
	return &Held{lk: lk, what: what}, nil
}

// Release frees the lock.
func (h *Held) Release() { h.lk.release() }
