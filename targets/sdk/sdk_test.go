package sdk

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSettings(t *testing.T) {
	t.Setenv("T_TICK", "20ms")
	t.Setenv("T_N", "7")
	t.Setenv("T_NAME", "x")
	var s Settings
	if got := s.Duration("T_TICK", time.Second); got != 20*time.Millisecond {
		t.Errorf("Duration = %v", got)
	}
	if got := s.Int("T_N", 1); got != 7 {
		t.Errorf("Int = %d", got)
	}
	if got := s.String("T_NAME", "y") + s.String("T_UNSET", "d"); got != "xd" {
		t.Errorf("String = %q", got)
	}
	if got := s.Int("T_UNSET", 3); got != 3 || s.Err() != nil {
		t.Errorf("default: %d, %v", got, s.Err())
	}

	t.Setenv("T_BAD", "soon")
	t.Setenv("T_NEG", "-1s")
	s = Settings{}
	s.Duration("T_BAD", time.Second)
	s.Duration("T_NEG", time.Second)
	s.Int("T_BAD", 1)
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), `T_BAD="soon"`) {
		t.Fatalf("first error: %v", err)
	}
}

func TestFileStore(t *testing.T) {
	type state struct{ Term uint64 }
	s := &FileStore[state]{Path: filepath.Join(t.TempDir(), "sub", "state.json")}
	if v, err := s.Load(); err != nil || v != (state{}) {
		t.Fatalf("first start: %+v %v", v, err)
	}
	for _, term := range []uint64{3, 4} {
		if err := s.Save(state{term}); err != nil {
			t.Fatal(err)
		}
		// A new store on the same file is a restarted node.
		if v, err := (&FileStore[state]{Path: s.Path}).Load(); err != nil || v.Term != term {
			t.Fatalf("after restart: %+v %v", v, err)
		}
	}
	if _, err := os.Stat(s.Path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left: %v", err)
	}
	// What a power cut leaves of a file never synced: a first start.
	os.WriteFile(s.Path, nil, 0o644)
	if v, err := s.Load(); err != nil || v != (state{}) {
		t.Errorf("an empty file: %+v %v", v, err)
	}
	os.WriteFile(s.Path, []byte("{"), 0o644)
	if _, err := s.Load(); err == nil {
		t.Error("loaded a torn file")
	}
}

type ping struct {
	To   string `json:"to"`
	Body string `json:"body"`
}

// Two transports deliver to each other; messages for a dead or unknown peer
// vanish without blocking the sender.
func TestTransport(t *testing.T) {
	inboxes := map[string]*Transport[ping]{}
	servers := map[string]*httptest.Server{}
	for _, name := range []string{"a", "b"} {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /msg", func(w http.ResponseWriter, r *http.Request) { inboxes[name].ServeHTTP(w, r) })
		servers[name] = httptest.NewServer(mux)
		defer servers[name].Close()
	}
	addr := func(name string) string { return strings.TrimPrefix(servers[name].URL, "http://") }
	// Peers are named by host; httptest listens on 127.0.0.1, so each side
	// knows the other as "127.0.0.1".
	inboxes["a"] = NewTransport[ping](Env{Node: "a", Peers: []string{addr("b"), "127.0.0.2:1"}}, "/msg", time.Second)
	inboxes["b"] = NewTransport[ping](Env{Node: "b", Peers: []string{addr("a")}}, "/msg", time.Second)

	inboxes["a"].Send("127.0.0.1", ping{To: "b", Body: "hello"})
	inboxes["a"].Send("nobody", ping{Body: "lost"})
	select {
	case m := <-inboxes["b"].Inbox():
		if m.Body != "hello" {
			t.Fatalf("got %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing delivered")
	}
	for range 2 * queueSize { // far more than the dead peer's queue holds
		inboxes["a"].Send("127.0.0.2", ping{Body: "to the void"})
	}

	resp, err := http.Post(servers["b"].URL+"/msg", "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("malformed message: %d", resp.StatusCode)
	}
}

func TestEnvFromOS(t *testing.T) {
	t.Setenv("SPLITBRAIN_NODE", "n2")
	t.Setenv("SPLITBRAIN_PEERS", "n1:7070,n3:7070")
	t.Setenv("SPLITBRAIN_RESOURCE", "http://resource:7000")
	t.Setenv("SPLITBRAIN_ADDR", "")
	t.Setenv("SPLITBRAIN_SERVICES", "store:2379,cache:6379")
	e, err := EnvFromOS()
	if err != nil {
		t.Fatal(err)
	}
	if e.Addr != ":7070" || strings.Join(e.PeerIDs(), ",") != "n1,n3" {
		t.Errorf("env %+v", e)
	}
	if e.Services["store"] != "store:2379" || e.Services["cache"] != "cache:6379" || len(e.Services) != 2 {
		t.Errorf("services %v", e.Services)
	}
	t.Setenv("SPLITBRAIN_NODE", "")
	if _, err := EnvFromOS(); err == nil {
		t.Error("no SPLITBRAIN_NODE: no error")
	}
}
