package sdk

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

// Bounds of the beat a watcher may ask for, and its default.
const (
	minBeat     = time.Millisecond
	maxBeat     = time.Minute
	defaultBeat = 50 * time.Millisecond
)

// samplePeriod is how often a watched belief is read: how long after a
// change its lines can come, and how short a belief can be and still be
// seen. Reading it is a lock and a copy, so a millisecond costs little.
const samplePeriod = time.Millisecond

// watchQueue is how many lines a watcher may be behind before it is cut
// off: a controller that stopped reading sees its stream end, not lines
// dropped from its middle.
const watchQueue = 256

// The watch clock is the kernel's CLOCK_MONOTONIC, and its Boot the
// kernel's boot id: every container on one host reads the same clock, so
// the harness dates the lines of all of them together, to within the
// quickest of their round trips. No clock fault reaches it: libfaketime
// cannot touch a Go program, and the SDK's skewed Clock is a wall clock.
// Where either cannot be read, the clock is Go's monotonic one from this
// process's start, with a Boot of this process's own.
var watchClock, boot = chooseWatchClock()

func chooseWatchClock() (func() int64, int64) {
	id, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	id = bytes.TrimSpace(id)
	if _, ok := kernelMonotonic(); ok && err == nil && len(id) > 0 {
		h := fnv.New64a()
		h.Write(id)
		return func() int64 {
			ns, _ := kernelMonotonic()
			return ns
		}, int64(h.Sum64()>>1) | 1
	}
	start := time.Now()
	return func() int64 { return max(1, int64(time.Since(start))) }, rand.Int64N(math.MaxInt64) | 1
}

// feed samples an Elector's belief while someone watches it, and queues
// each watcher its lines. Every sample is taken, and every line queued,
// under one lock, so each watcher's lines are in the order of their At.
type feed struct {
	node    string
	elector Elector
	start   sync.Once

	mu       sync.Mutex
	last     contract.WatchLine // the latest sample
	watchers map[*watcher]struct{}
}

type watcher struct {
	beat  int64
	sent  int64 // At of the latest line queued
	lines chan contract.WatchLine
}

func newFeed(node string, e Elector) *feed {
	return &feed{node: node, elector: e, watchers: map[*watcher]struct{}{}}
}

// subscribe adds a watcher whose first line is a sample taken now.
func (f *feed) subscribe(beat time.Duration) *watcher {
	f.start.Do(func() { go f.sampleForever() })
	w := &watcher{beat: int64(beat), lines: make(chan contract.WatchLine, watchQueue)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sample()
	f.watchers[w] = struct{}{}
	f.queue(w, f.last)
	return w
}

// unsubscribe removes w, if the feed has not cut it off already.
func (f *feed) unsubscribe(w *watcher) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.watchers[w]; ok {
		delete(f.watchers, w)
		close(w.lines)
	}
}

func (f *feed) sampleForever() {
	t := time.NewTicker(samplePeriod)
	defer t.Stop()
	for range t.C {
		f.mu.Lock()
		if len(f.watchers) > 0 {
			f.sample()
		}
		f.mu.Unlock()
	}
}

// sample reads the belief and queues what each watcher is owed: on a
// change the old belief's last sample and the new one, otherwise the new
// one once a beat has passed. f.mu is held.
func (f *feed) sample() {
	l := f.elector.Leadership()
	l.Node = f.node
	now := contract.WatchLine{Leadership: l, At: watchClock(), Boot: boot}
	changed := now.Leadership != f.last.Leadership
	for w := range f.watchers {
		switch {
		case changed:
			if f.last.At > w.sent {
				f.queue(w, f.last)
			}
			f.queue(w, now)
		case now.At-w.sent >= w.beat:
			f.queue(w, now)
		}
	}
	f.last = now
}

// queue hands w a line, or cuts w off when it is too far behind. f.mu is
// held.
func (f *feed) queue(w *watcher, l contract.WatchLine) {
	if _, ok := f.watchers[w]; !ok {
		return
	}
	select {
	case w.lines <- l:
		w.sent = l.At
	default:
		delete(f.watchers, w)
		close(w.lines)
	}
}

// watch serves WatchPath.
func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	beat := defaultBeat
	if v := r.URL.Query().Get("every"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < minBeat || d > maxBeat {
			reply(w, http.StatusBadRequest, map[string]string{"error": "every must be a duration from 1ms to 1m"})
			return
		}
		beat = d
	}
	sub := s.feed.subscribe(beat)
	defer s.feed.unsubscribe(sub)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	flush := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	for {
		select {
		case <-r.Context().Done():
			return
		case l, ok := <-sub.lines:
			if !ok || enc.Encode(l) != nil || flush.Flush() != nil {
				return
			}
		}
	}
}
