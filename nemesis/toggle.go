package nemesis

import (
	"context"
	"sync"
	"time"
)

// toggleTimeout bounds one strike or undoing of a toggling fault.
const toggleTimeout = 10 * time.Second

// toggling strikes and undoes a fault over and over, from its first
// strike (the caller's) until stop: set(ctx, false) undoes it, set(ctx,
// true) strikes it again, each state held for the next of periods, then
// for as long as draw says of it (struck or undone). Each toggle, with the words set returns, is
// sent on the channel for the history; none is waited on: a reader that
// does not keep up misses a toggle, never the fault its heal. stop ends
// the toggling, in whichever state it is, and returns the first error a
// toggle met; the channel is closed by then.
func toggling(ctx context.Context, periods []time.Duration, draw func(struck bool) time.Duration, set func(ctx context.Context, on bool) (string, error)) (<-chan Toggle, func() error) {
	// Room for every toggle of a fault held many times its periods.
	toggles := make(chan Toggle, 256)
	quit, stopped := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var first error
	go func() {
		defer close(stopped)
		defer close(toggles)
		for i, on := 0, true; ; i++ {
			var d time.Duration
			if i < len(periods) {
				d = periods[i]
			} else {
				d = draw(on)
			}
			select {
			case <-quit:
				return
			case <-time.After(d):
			}
			on = !on
			step, cancel := context.WithTimeout(context.WithoutCancel(ctx), toggleTimeout)
			st := Toggle{Cut: on, Sent: time.Now()}
			st.What, st.Err = set(step, on)
			cancel()
			mu.Lock()
			if first == nil {
				first = st.Err
			}
			mu.Unlock()
			select {
			case toggles <- st:
			default:
			}
		}
	}()
	stop := func() error {
		close(quit)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return first
	}
	return toggles, stop
}
