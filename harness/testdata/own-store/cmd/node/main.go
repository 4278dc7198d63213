// Command node keeps a register of its own for the harness's tests of a
// target's own data: n1 leads with token 1 throughout and holds the
// register; every other node reaches it through n1, as a replica sends
// a client to its primary. With FORGET_AFTER (a Go duration) set, n1
// acknowledges every write that comes that long after it was first
// asked, and keeps none of them: acknowledged writes that are gone.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

// store is n1's register, or another node's way to it.
type store struct {
	node, primary string // primary: n1's node API base URL
	forgetAfter   time.Duration

	mu    sync.Mutex
	held  map[string]string
	first time.Time // when the register was first asked
}

func (s *store) Leadership() contract.Leadership {
	return sdk.Belief(s.node == "n1", "n1", 1)
}

func (s *store) ReadData(ctx context.Context, key string) (string, error) {
	if s.node != "n1" {
		var ans contract.DataAnswer
		err := s.forward(ctx, http.MethodGet, contract.DataPath+"?key="+url.QueryEscape(key), nil, &ans)
		return ans.Value, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked()
	return s.held[key], nil
}

func (s *store) WriteData(ctx context.Context, key, value string) error {
	if s.node != "n1" {
		body, _ := json.Marshal(contract.DataWrite{Key: key, Value: value})
		return s.forward(ctx, http.MethodPost, contract.DataPath, body, &contract.DataAnswer{})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked()
	if s.forgetAfter == 0 || time.Since(s.first) < s.forgetAfter {
		s.held[key] = value
	}
	return nil
}

// asked starts the forgetting clock at the register's first use.
func (s *store) asked() {
	if s.first.IsZero() {
		s.first = time.Now()
	}
}

// forward sends a request on to n1 and reads its answer into ans.
func (s *store) forward(ctx context.Context, method, path string, body []byte, ans *contract.DataAnswer) error {
	req, err := http.NewRequestWithContext(ctx, method, s.primary+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(ans); err != nil || resp.StatusCode != http.StatusOK {
		return fmt.Errorf("n1 answered %d %s", resp.StatusCode, ans.Error)
	}
	return nil
}

func main() {
	sdk.AgentMain(func(env sdk.Env, s *sdk.Settings) (*sdk.Agent, error) {
		st := &store{node: env.Node, forgetAfter: s.Duration("FORGET_AFTER", 0), held: map[string]string{}}
		for _, p := range env.Peers {
			if sdk.PeerHost(p) == "n1" {
				st.primary = "http://" + p
			}
		}
		return &sdk.Agent{Elector: st}, s.Err()
	})
}
