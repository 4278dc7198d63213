package harness

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/history"
	"github.com/splitbrain/splitbrain/results"
)

// footprintEvery is how often the controller samples its own footprint
// while a run drives its cluster.
const footprintEvery = 10 * time.Second

// footprint samples the controller's resident memory, its Go heap and the
// history's length while a run drives its cluster: in run.json they show
// whether an hour-long soak kept its memory flat and wrote its history at
// a steady rate, which a verdict cannot.
type footprint struct {
	mu      sync.Mutex
	samples []results.Sample
	quit    chan struct{}
	done    chan struct{}
}

func startFootprint(start time.Time, every time.Duration, rec *history.Recorder) *footprint {
	f := &footprint{quit: make(chan struct{}), done: make(chan struct{})}
	take := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		s := results.Sample{
			At:     time.Since(start).Seconds(),
			RSSMB:  float64(residentBytes()) / (1 << 20),
			HeapMB: float64(m.HeapAlloc) / (1 << 20),
			Events: rec.Count(),
		}
		f.mu.Lock()
		f.samples = append(f.samples, s)
		f.mu.Unlock()
	}
	take()
	go func() {
		defer close(f.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-f.quit:
				take()
				return
			case <-t.C:
				take()
			}
		}
	}()
	return f
}

// stop takes a last sample and returns them all.
func (f *footprint) stop() []results.Sample {
	close(f.quit)
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.samples
}

// residentBytes is the process's resident set size, from /proc; 0 where
// there is no /proc (not Linux).
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := bytes.Fields(b)
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
