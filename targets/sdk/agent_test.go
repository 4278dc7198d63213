package sdk

import (
	"strings"
	"testing"
	"time"
)

func TestAgentRefuses(t *testing.T) {
	for _, tc := range []struct {
		agent Agent
		want  string
	}{
		{Agent{}, "without an Elector"},
		{Agent{Elector: &agent{}, Server: []string{""}}, "names no program"},
		{Agent{Elector: &agent{}, Server: []string{"/no/such/server"}}, "/no/such/server"},
	} {
		if _, err := tc.agent.start(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.agent, err, tc.want)
		}
	}
}

// The node API waits for Ready, and the Loop starts after it; a Polled
// agent serves no watch.
func TestAgentStart(t *testing.T) {
	for _, polled := range []bool{false, true} {
		var ready bool
		looped := make(chan bool, 1)
		a := &Agent{
			Elector: &agent{},
			Ready:   func() { ready = true },
			Loop:    func() { looped <- ready },
			Polled:  polled,
		}
		srv, err := a.start()
		if err != nil {
			t.Fatal(err)
		}
		if !ready {
			t.Fatal("served before Ready returned")
		}
		select {
		case afterReady := <-looped:
			if !afterReady {
				t.Error("the Loop ran before Ready returned")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the Loop never ran")
		}
		if watched := srv.feed != nil; watched == polled {
			t.Errorf("Polled %v: serves a watch: %v", polled, watched)
		}
	}
}
