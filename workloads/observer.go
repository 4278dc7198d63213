package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/history"
)

// Observer polls GET /leader on every node and records each answer. It also
// keeps the latest answer per node, so the nemesis can aim at the leader and
// the progress line can name it.
type Observer struct {
	cluster  Cluster
	rec      *history.Recorder
	interval time.Duration
	http     *http.Client

	mu     sync.Mutex
	latest map[string]history.Event
}

// NewObserver polls every interval.
func NewObserver(cluster Cluster, rec *history.Recorder, interval time.Duration) *Observer {
	return &Observer{
		cluster:  cluster,
		rec:      rec,
		interval: interval,
		// A node that does not answer within a few intervals tells us
		// nothing; the next poll tries again.
		http:   &http.Client{Timeout: 4 * interval, Transport: &http.Transport{MaxIdleConnsPerHost: 2}},
		latest: map[string]history.Event{},
	}
}

// Run polls until ctx ends.
func (o *Observer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, node := range o.cluster.Nodes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.poll(ctx, node)
		}()
	}
	wg.Wait()
}

func (o *Observer) poll(ctx context.Context, node string) {
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for {
		if e, ok := o.observe(ctx, node); ok && ctx.Err() == nil {
			e = o.rec.Record(e)
			o.mu.Lock()
			o.latest[node] = e
			o.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// observe asks node for its belief. A poll that gets no usable answer is
// recorded too, with the reason in Error: silence is what tells the
// checkers that a node (frozen, down, cut off) proved nothing for a while.
func (o *Observer) observe(ctx context.Context, node string) (history.Event, bool) {
	base := o.cluster.NodeURL(node)
	if base == "" {
		return history.Event{}, false
	}
	e := history.Event{Type: history.Leader, Node: node, Sent: o.rec.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/leader", nil)
	if err != nil {
		return history.Event{}, false
	}
	resp, err := o.http.Do(req)
	if err != nil {
		e.Error = "no answer: " + err.Error()
		return e, true
	}
	defer resp.Body.Close()
	var ans struct {
		Leader   bool   `json:"leader"`
		Token    int64  `json:"token"`
		LeaderID string `json:"leader_id"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&ans) != nil {
		e.Error = fmt.Sprintf("unusable answer: status %d", resp.StatusCode)
		return e, true
	}
	e.IsLeader, e.LeaderID = ans.Leader, ans.LeaderID
	if ans.Leader {
		e.Token = ans.Token
	}
	return e, true
}

// Leader is the node that most recently claimed leadership with the highest
// token among fresh observations (younger than maxAge), or "" if none.
func (o *Observer) Leader(maxAge time.Duration) (node string, token int64) {
	now := o.rec.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for n, e := range o.latest {
		if e.IsLeader && now-e.Time <= int64(maxAge) && e.Token > token {
			node, token = n, e.Token
		}
	}
	return node, token
}

// Leaders counts the nodes whose fresh observation (younger than maxAge)
// says they lead.
func (o *Observer) Leaders(maxAge time.Duration) int {
	now := o.rec.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, e := range o.latest {
		if e.IsLeader && now-e.Time <= int64(maxAge) {
			n++
		}
	}
	return n
}
