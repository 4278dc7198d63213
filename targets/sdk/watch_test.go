package sdk

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

// watchLines opens the watch of srv and returns its lines as they come.
func watchLines(t *testing.T, url string) <-chan contract.WatchLine {
	t.Helper()
	resp, err := http.Get(url + contract.WatchPath + "?every=20ms")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		resp.Body.Close()
	})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch answered %s", resp.Status)
	}
	out := make(chan contract.WatchLine)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var l contract.WatchLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Errorf("line %q: %v", sc.Text(), err)
				return
			}
			select {
			case out <- l:
			case <-done:
				return
			}
		}
	}()
	return out
}

func next(t *testing.T, lines <-chan contract.WatchLine) contract.WatchLine {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the watch ended")
		}
		return l
	case <-time.After(5 * time.Second):
		t.Fatal("no line for 5 s")
	}
	return contract.WatchLine{}
}

// The watch tells the belief at once, then a change as the old belief's
// last sample and the new one's first, then a line a beat while nothing
// changes, in the order of the node's clock.
func TestWatchTellsEveryChange(t *testing.T) {
	e := &snapshot{node: "n1"} // the belief an sdk.Node publishes
	e.publish(Belief(false, "n2", 0))
	srv := httptest.NewServer(NewServer(Env{Node: "n1"}, e).mux)
	t.Cleanup(srv.Close) // after the watch's own cleanup hangs up
	lines := watchLines(t, srv.URL)

	first := next(t, lines)
	if first.Node != "n1" || first.Leader || first.LeaderID != "n2" || first.At <= 0 {
		t.Fatalf("first line %+v", first)
	}
	e.publish(Belief(true, "n1", 5))
	prev := first
	var old contract.WatchLine
	for l := next(t, lines); ; l = next(t, lines) {
		if l.At < prev.At {
			t.Fatalf("line %+v goes back from %+v", l, prev)
		}
		if l.Leader {
			if l.Token != 5 || prev.Leader {
				t.Fatalf("change %+v after %+v", l, prev)
			}
			old = prev
			prev = l
			break
		}
		prev = l
	}
	if old.At >= prev.At {
		t.Errorf("the old belief's last sample %d is not before the new one's %d", old.At, prev.At)
	}
	for range 3 {
		l := next(t, lines)
		if !l.Leader || l.Token != 5 {
			t.Fatalf("beat %+v, want the unchanged belief", l)
		}
		if l.At-prev.At < int64(20*time.Millisecond) {
			t.Errorf("beats %v apart, want at least the 20ms asked for", time.Duration(l.At-prev.At))
		}
		prev = l
	}
}

// A beat out of bounds is refused; a Polled node serves no watch, so the
// harness knows to poll it.
func TestWatchRefusals(t *testing.T) {
	e := &snapshot{node: "n1"}
	for _, tc := range []struct {
		name   string
		opts   []Option
		query  string
		status int
	}{
		{"a beat too short", nil, "?every=10us", http.StatusBadRequest},
		{"not a duration", nil, "?every=soon", http.StatusBadRequest},
		{"a polled node", []Option{Polled()}, "", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(NewServer(Env{Node: "n1"}, e, tc.opts...).mux)
			defer srv.Close()
			resp, err := http.Get(srv.URL + contract.WatchPath + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

// On Linux the watch reads the kernel's monotonic clock, which runs with
// Go's own.
func TestKernelMonotonic(t *testing.T) {
	a, ok := kernelMonotonic()
	if runtime.GOOS != "linux" {
		if ok {
			t.Fatal("a kernel clock outside Linux")
		}
		return
	}
	start := time.Now()
	time.Sleep(20 * time.Millisecond)
	b, ok := kernelMonotonic()
	if !ok || a <= 0 || b-a < int64(time.Since(start))-int64(time.Millisecond) {
		t.Errorf("kernel clock %d then %d over %v", a, b, time.Since(start))
	}
}
