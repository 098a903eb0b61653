package update

import (
	"errors"
	"testing"
	"time"
)

// TestLockWaitsForReleasingHolder: a lock released within lockWait (a killed update whose
// memory the kernel is still tearing down) is taken; one held past it is ErrLocked, naming the
// holder's update.
func TestLockWaitsForReleasingHolder(t *testing.T) {
	t.Parallel()
	storage := t.TempDir()
	first, err := acquire(storage, "u1")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(lockWait / 4)
		first.release()
	}()
	second, err := acquire(storage, "u2")
	if err != nil {
		t.Fatalf("a lock released %s after the second update asked for it: %v", lockWait/4, err)
	}
	start := time.Now()
	_, err = acquire(storage, "u3")
	if !errors.Is(err, ErrLocked) || time.Since(start) < lockWait {
		t.Fatalf("a lock held throughout: %v after %s; want ErrLocked after %s", err, time.Since(start), lockWait)
	}
	second.release()
}
