package workloads

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// staticCluster is one node at a fixed URL.
type staticCluster struct{ url, resource string }

func (c staticCluster) Nodes() []string       { return []string{"n1"} }
func (c staticCluster) NodeURL(string) string { return c.url }
func (c staticCluster) ResourceURL() string   { return c.resource }

// newWriter is a writer to the node at url whose operations time out
// after timeout.
func newWriter(t *testing.T, url string, timeout time.Duration) *Writer {
	rec, err := history.NewRecorder(t.TempDir()+"/h.jsonl", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	return NewWriter(Config{Rate: 1, Concurrency: 1, Keys: 1, Timeout: timeout}, staticCluster{url: url}, rec)
}

// answered is a timeout no answer of a test server misses, a loaded
// machine's race-detected test included (300 ms was missed once).
const answered = 10 * time.Second

// The node API's answers map to Jepsen's outcomes.
func TestWriteOutcomes(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   history.Type
		token  int64
	}{
		{200, `{"ok":true,"token":7,"seq":3}`, history.OK, 7},
		{409, `{"error":"not-leader"}`, history.Fail, 0},
		{412, `{"error":"fenced","token":6,"current":7}`, history.Fail, 6},
		{503, `{"error":"resource unreachable"}`, history.Info, 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
			w.Write([]byte(c.body))
		}))
		e := newWriter(t, srv.URL, answered).write("n1", "k", "v")
		srv.Close()
		if e.Type != c.want || e.Token != c.token {
			t.Errorf("%d %s: recorded %s token %d, want %s token %d", c.status, c.body, e.Type, e.Token, c.want, c.token)
		}
	}
}

// A node that cannot be connected to never saw the write: fail. A node
// that took the request and went silent may have done it: info.
func TestTransportOutcomes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	if e := newWriter(t, closed, answered).write("n1", "k", "v"); e.Type != history.Fail {
		t.Errorf("refused connection recorded as %s (%s)", e.Type, e.Error)
	}

	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	defer srv.Close()
	defer close(hang)
	if e := newWriter(t, srv.URL, 300*time.Millisecond).write("n1", "k", "v"); e.Type != history.Info {
		t.Errorf("timed-out write recorded as %s (%s)", e.Type, e.Error)
	}
}

// A target's own store: its answers map to outcomes as the resource's
// writes do, without tokens; a read that is not answered 200 fails.
func TestDataOutcomes(t *testing.T) {
	for _, c := range []struct {
		status      int
		body        string
		write, read history.Type
		value       string
	}{
		{200, `{"ok":true,"value":"v9"}`, history.OK, history.OK, "v9"},
		{409, `{"error":"not-leader"}`, history.Fail, history.Fail, ""},
		{503, `{"error":"CLUSTERDOWN"}`, history.Info, history.Fail, ""},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
			w.Write([]byte(c.body))
		}))
		w := newWriter(t, srv.URL, answered)
		we, re := w.writeData("n1", "k", "v"), w.readData("n1", "k")
		srv.Close()
		if we.Type != c.write || re.Type != c.read || re.Value != c.value || re.Node != "n1" {
			t.Errorf("%d %s: write %s, read %s %q from %s; want %s, %s %q", c.status, c.body, we.Type, re.Type, re.Value, re.Node, c.write, c.read, c.value)
		}
	}
}
