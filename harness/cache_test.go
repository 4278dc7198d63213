package harness

import (
	"context"
	"testing"
	"time"
)

// A lock is held by one taker at a time, in this process as in others
// (the lock file); a lock of another name is not held by it, and a wait
// ends with its context.
func TestLock(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // where the lock files go
	ctx := context.Background()
	const name = "test-lock"
	unlock, err := lock(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	other, err := lock(ctx, name+"-other")
	if err != nil {
		t.Fatal(err)
	}
	other()
	short, cancel := context.WithTimeout(ctx, 3*lockPoll)
	defer cancel()
	if again, err := lock(short, name); err == nil {
		again()
		t.Fatal("a held lock was taken again")
	}
	taken := make(chan struct{})
	go func() {
		again, err := lock(ctx, name)
		if err == nil {
			again()
		}
		close(taken)
	}()
	unlock()
	select {
	case <-taken:
	case <-time.After(10 * time.Second):
		t.Fatal("a lock let go was not taken")
	}
}
