package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// Observer records every node's belief: it watches a node that serves the
// watch (contract.WatchPath), which pushes each change as it happens, and polls
// GET /leader on any other. It also keeps the latest belief per node, so
// the nemesis can aim at the leader and the progress line can name it.
type Observer struct {
	cluster  Cluster
	rec      *history.Recorder
	interval time.Duration
	http     *http.Client
	streams  *http.Client

	mu     sync.Mutex
	latest map[string]history.Event
	// lastAnswer is each node's latest observation that it answered.
	lastAnswer map[string]history.Event
	// answered counts the observations a node answered, pushed or polled.
	answered atomic.Int64
}

// NewObserver polls every interval, and asks watched nodes for a line
// every interval while their belief does not change.
func NewObserver(cluster Cluster, rec *history.Recorder, interval time.Duration) *Observer {
	return &Observer{
		cluster:  cluster,
		rec:      rec,
		interval: interval,
		// A node that does not answer within a few intervals tells us
		// nothing; the next poll tries again.
		http: &http.Client{Timeout: 4 * interval, Transport: &http.Transport{MaxIdleConnsPerHost: 2, DialContext: dialerOf(cluster, 4*interval)}},
		// A watch lasts as long as its node answers; only its start is
		// bounded here, and the silence between lines by watch. A killed
		// node's address answers nothing at all: a short dial finds its
		// restart within a few intervals, and with it the beliefs it
		// starts with.
		streams: &http.Client{Transport: &http.Transport{
			DialContext:           dialerOf(cluster, 4*interval),
			ResponseHeaderTimeout: 4 * interval,
			DisableKeepAlives:     true,
		}},
		latest:     map[string]history.Event{},
		lastAnswer: map[string]history.Event{},
	}
}

// Run observes until ctx ends.
func (o *Observer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, node := range o.cluster.Nodes() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.follow(ctx, node)
		}()
	}
	wg.Wait()
}

// follow watches node for as long as it serves the watch, and from the
// first answer that says it does not, polls it instead. A watch that
// fails, ends or falls silent is recorded as silence, and another is
// opened an interval later.
//
// A silent watch is not closed: a frozen node, the moment it thaws, tells
// its belief first on the streams it was serving when it froze, while a
// request that queued during the freeze waits to be accepted and read. The
// difference is the overlap a woken leader shows before its first round
// trip to its peers or its lock tells it that it was deposed, which can be
// shorter than that wait. So the latest silent stream stays open beside
// the new ones until a newer one is heard from, and a while after.
func (o *Observer) follow(ctx context.Context, node string) {
	var (
		streams sync.WaitGroup
		kept    context.CancelFunc // the latest stream to fall silent
	)
	defer func() {
		if kept != nil {
			kept()
		}
		streams.Wait() // no line is recorded after Run returns
	}()
	for ctx.Err() == nil {
		sctx, cancel := context.WithCancel(ctx)
		silent, done := make(chan struct{}), make(chan error, 1)
		retire := kept
		heard := func() {
			if retire != nil {
				time.AfterFunc(retireGrace, retire)
			}
		}
		streams.Go(func() { done <- o.watch(sctx, node, silent, heard) })
		var err error
		select {
		case err = <-done:
			cancel()
		case <-silent:
			if kept != nil {
				kept()
			}
			kept, err = cancel, errSilent
		}
		if errors.Is(err, errNoWatch) {
			o.poll(ctx, node)
			return
		}
		if err != nil && ctx.Err() == nil {
			o.record(history.Event{Type: history.Leader, Node: node, Sent: o.rec.Now(), Error: "no answer: " + err.Error()})
		}
		select {
		case <-ctx.Done():
		case <-time.After(o.interval):
		}
	}
}

// record adds e to the history and keeps it as node's latest.
func (o *Observer) record(e history.Event) {
	e = o.rec.Record(e)
	if e.Error == "" {
		o.answered.Add(1)
	}
	o.mu.Lock()
	o.latest[e.Node] = e
	if e.Error == "" {
		o.lastAnswer[e.Node] = e
	}
	o.mu.Unlock()
}

// Answered is how many observations the nodes answered so far.
func (o *Observer) Answered() int64 { return o.answered.Load() }

// errNoWatch is a node that answers the watch with 404 or 405: it serves
// only GET /leader.
var errNoWatch = errors.New("the node serves no watch")

// errSilent is a watch that sent no line for longer than a running node
// would: the node is frozen, dead with its connection lingering, or
// starved.
var errSilent = errors.New("the watch fell silent")

// retireGrace is how long a silent stream stays open after a newer stream
// of its node was heard from: long enough for the lines it owes from the
// moment the node thawed to arrive.
const retireGrace = time.Second

// watch records node's lines until the stream fails or ends, or ctx ends.
// It closes silent when the stream has sent no line for longer than a node
// that runs would (a frozen node, a dead one whose connection lingers),
// and calls heard at its first line.
func (o *Observer) watch(ctx context.Context, node string, silent chan<- struct{}, heard func()) error {
	base := o.cluster.NodeURL(node)
	if base == "" {
		return errors.New("no address")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wait := max(20*o.interval, time.Second)
	var once sync.Once
	quiet := time.AfterFunc(wait, func() { once.Do(func() { close(silent) }) })
	defer quiet.Stop()

	// Sent is when the connection was ready, past its dial and before the
	// request was written: no line can have been made earlier, and the
	// later it is, the more exactly the lines are dated.
	var ready atomic.Int64
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { ready.Store(o.rec.Now()) }}
	sent := o.rec.Now()
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, base+contract.WatchPath+"?every="+o.interval.String(), nil)
	if err != nil {
		return err
	}
	resp, err := o.streams.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sent = max(sent, ready.Load())
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		return errNoWatch
	default:
		return fmt.Errorf("watch answered %s", resp.Status)
	}
	dec := json.NewDecoder(resp.Body)
	for first := true; ; first = false {
		var l contract.WatchLine
		if err := dec.Decode(&l); err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("watch ended")
			}
			return err
		}
		if l.At <= 0 {
			return fmt.Errorf("watch line without a time: %+v", l)
		}
		quiet.Reset(wait)
		if first {
			heard()
		}
		o.record(history.Event{Type: history.Leader, Node: node, Sent: sent, At: l.At, Boot: l.Boot, IsLeader: l.Leader, Token: tokenOf(l.Leadership), LeaderID: l.LeaderID})
	}
}

func (o *Observer) poll(ctx context.Context, node string) {
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for {
		if e, ok := o.observe(ctx, node); ok && ctx.Err() == nil {
			o.record(e)
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+contract.LeaderPath, nil)
	if err != nil {
		return history.Event{}, false
	}
	resp, err := o.http.Do(req)
	if err != nil {
		e.Error = "no answer: " + err.Error()
		return e, true
	}
	defer resp.Body.Close()
	var ans contract.Leadership
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&ans) != nil {
		e.Error = fmt.Sprintf("unusable answer: status %d", resp.StatusCode)
		return e, true
	}
	e.IsLeader, e.Token, e.LeaderID = ans.Leader, tokenOf(ans), ans.LeaderID
	return e, true
}

// tokenOf is the token a belief claims: none unless it leads.
func tokenOf(l contract.Leadership) int64 {
	if l.Leader {
		return l.Token
	}
	return 0
}

// Leader is the node that claimed leadership with the highest token among
// the answers younger than maxAge, or "" if none. As in Beliefs, a poll
// that timed out since does not unseat it: a kill-leader aimed by the
// latest poll alone struck a follower of a steady Redis Cluster whose
// primary's agent had missed one poll.
func (o *Observer) Leader(maxAge time.Duration) (node string, token int64) {
	now := o.rec.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for n, e := range o.lastAnswer {
		if e.IsLeader && now-e.Time <= int64(maxAge) && e.Token > token {
			node, token = n, e.Token
		}
	}
	return node, token
}

// Beliefs tells, of every node that answered within maxAge, whether its
// latest answer says it leads. A node missing from it has said nothing
// that long: down, frozen, cut off, or not heard of yet. A poll that
// timed out since its answer does not remove it: on a loaded machine a
// real system's agent misses the observer's 200 ms now and then (a
// Patroni's or a Redis Cluster's, every few seconds each in a make test),
// while a node that is down fails every poll.
func (o *Observer) Beliefs(maxAge time.Duration) map[string]bool {
	now := o.rec.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]bool{}
	for n, e := range o.lastAnswer {
		if now-e.Time <= int64(maxAge) {
			out[n] = e.IsLeader
		}
	}
	return out
}

// Leaders gives the token of every node whose latest observation, however
// old, says it leads: the checkers' rule for a recovery, where a node that
// stopped answering (an error recorded) leads nothing, and a slow answer
// still counts until the next one.
func (o *Observer) Leaders() []int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var tokens []int64
	for _, e := range o.latest {
		if e.IsLeader {
			tokens = append(tokens, e.Token)
		}
	}
	return tokens
}
