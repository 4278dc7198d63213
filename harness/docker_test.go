package harness

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
)

// A network still joined by a container that is on its way out is
// removed once the container is gone: the Engine releases a removed
// container's endpoint after the removal returns, so teardown waits for
// it instead of failing the run.
func TestRemoveWaitsForAnEndpointToGo(t *testing.T) {
	if testing.Short() {
		t.Skip("needs Docker")
	}
	ctx := context.Background()
	d := testDocker(t)
	runID, nw := throwawayNetwork(t, d, "test-endpoint")
	// The container belongs to another run id, so that removing runID's
	// things finds the network still joined.
	leaving := runID + "-leaving"
	t.Cleanup(func() { d.Remove(context.Background(), LabelRun+"="+leaving) })
	startResource(t, d, leaving, nw, "resource")
	const goesAfter = time.Second
	gone := make(chan error, 1)
	go func() {
		time.Sleep(goesAfter)
		_, err := d.Remove(ctx, LabelRun+"="+leaving)
		gone <- err
	}()
	began := time.Now()
	removed, err := d.Remove(ctx, LabelRun+"="+runID)
	if err != nil || removed.Networks != 1 {
		t.Fatalf("removed %+v: %v", removed, err)
	}
	if took := time.Since(began); took < goesAfter {
		t.Errorf("the network went after %s, before the container that joined it", took)
	}
	if err := <-gone; err != nil {
		t.Fatal(err)
	}
}

// A freeze that meets the engine's stale record of the freeze before (a
// conflict that says so) is tried again until it passes; any other
// conflict (a container that is not running) is the answer at once.
func TestPauseStateSettles(t *testing.T) {
	stale := fmt.Errorf("Container n2 is already paused: %w", cerrdefs.ErrConflict)
	calls := 0
	err := retryTransient(context.Background(), func() error {
		if calls++; calls < 3 {
			return stale
		}
		return nil
	}, "is already paused")
	if err != nil || calls != 3 {
		t.Errorf("after %d calls: %v, want success on the third", calls, err)
	}
	stopped := fmt.Errorf("Container n2 is not running: %w", cerrdefs.ErrConflict)
	calls = 0
	err = retryTransient(context.Background(), func() error { calls++; return stopped })
	if !errors.Is(err, stopped) || calls != 1 {
		t.Errorf("after %d calls: %v, want the conflict at once", calls, err)
	}
}
