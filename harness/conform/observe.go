package conform

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/workloads"
)

// How conform questions the nodes: as a run's observer and workload do,
// by its defaults.
var (
	defaults = harness.DefaultConfig()
	// pollEvery is how often every node is asked GET /leader.
	pollEvery = defaults.ObserveInterval
	// requestTimeout bounds every request, as an operation's timeout
	// bounds a write.
	requestTimeout = defaults.OpTimeout
	// giveUp is how long the observer waits for an answer to GET /leader
	// before it drops it and takes the node for silent: four intervals
	// (workloads.NewObserver). No answer may take longer.
	giveUp = 4 * pollEvery
	// latencyBound is how long a node's answers may take, but for one in
	// lateShare: half of giveUp, so that a node keeps pace with the polls
	// with room to spare, while a loaded machine still delays a few.
	latencyBound = giveUp / 2
	// silence is how long a watch may send nothing before the observer
	// takes its node for frozen (workloads.Observer's watch).
	silence = max(20*pollEvery, time.Second)
)

// watchFor is how long every node is sampled and watched once a single
// leader was seen (or the target's reaction passed without one): long
// enough for tokens to go back and a second leader to appear, short
// enough for the first command a target's author runs.
const watchFor = 3 * time.Second

// lateShare is the share of a node's answers that may take longer than
// latencyBound (but not longer than giveUp).
const lateShare = 10 // one in

// plantAbove is how far above the leader's token conform writes a key on
// the resource itself, so that the leader's own write to it is refused:
// beyond any term or epoch a node reaches while conform watches.
const plantAbove = 1 << 40

// Answer is one HTTP exchange as conform saw it.
type Answer struct {
	At     time.Duration // when it was asked, since the observation began
	Took   time.Duration
	Status int // 0: no answer
	Body   []byte
	Err    string // why there was no answer
}

// Round is GET /leader asked of every node at once.
type Round struct {
	At      time.Duration
	Answers map[string]Answer // by node
}

// Stream is what a node's watch (contract.WatchPath) sent while conform
// listened.
type Stream struct {
	Status int    // 0: no answer
	Err    string // why it failed or ended before conform stopped listening
	Lines  []Line
}

// Line is one line of a watch.
type Line struct {
	Arrived time.Duration // since the watch was asked
	Body    []byte
}

// WriteProbe is one POST /write to a node and what the resource held for
// its key afterwards.
type WriteProbe struct {
	Node, Key, Value string
	Answer           Answer
	// Around is the node's GET /leader just before and just after the
	// write through the leader.
	Around []Answer
	// Planted is the token conform wrote the key with itself, before the
	// node's write, for the resource to refuse the node's (fenced-412).
	Planted int64
	Held    contract.Register
}

// Observation is everything conform saw of one cluster, from the moment
// every node was healthy.
type Observation struct {
	Nodes    []string
	Reaction time.Duration // the target's, from its manifest
	Health   map[string]Answer
	// Rounds are every poll of GET /leader, every pollEvery: until a
	// single leader is seen or Reaction passed, then for watchFor.
	Rounds  []Round
	Streams map[string]Stream // by node, listened to for watchFor
	// Leader is the write through the single leader of the last round,
	// Fenced the one its resource refused; nil without a single leader.
	Leader, Fenced *WriteProbe
	// Followers are the writes to every node the last round saw follow.
	Followers []WriteProbe
	// OwnData says the manifest declares the register in the system's own
	// store (own_data); Data is the probe of it through the leader, nil
	// without a single leader or without the declaration.
	OwnData bool
	Data    *DataProbe
}

// DataProbe is a write of the system's own register through the leader,
// the leader's read of it, and every node's read after.
type DataProbe struct {
	Node, Key, Value string
	Write, Read      Answer
	// Reads are every other node's last read of the key: asked until it
	// held the value or refused it (409), or for dataSettle.
	Reads map[string]Answer
}

// dataSettle is how long the other nodes' reads of conform's own-data
// write may take to show it: a replica may lag its primary.
const dataSettle = 3 * time.Second

type observer struct {
	cluster workloads.Cluster
	began   time.Time
	http    *http.Client
	streams *http.Client
	res     *contract.ResourceClient
}

// observe questions the running cluster c: its health, its beliefs until
// a single leader or for reaction, then its beliefs and watches for
// watchFor, then writes through its leader and its followers. An error is
// a cancelled ctx or a resource that failed; the target's failures are
// observations.
func observe(ctx context.Context, c workloads.Cluster, reaction time.Duration, ownData bool) (Observation, error) {
	ob := &observer{
		cluster: c,
		began:   time.Now(),
		http:    &http.Client{Timeout: requestTimeout},
		// Only a stream's start is bounded: it lasts for watchFor.
		streams: &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: requestTimeout, DisableKeepAlives: true}},
	}
	ob.res = &contract.ResourceClient{BaseURL: c.ResourceURL(), HTTP: ob.http}
	o := Observation{Nodes: c.Nodes(), Reaction: reaction, OwnData: ownData, Health: ob.everyNode(ctx, http.MethodGet, "/health")}

	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for ctx.Err() == nil {
		r := ob.round(ctx)
		o.Rounds = append(o.Rounds, r)
		if len(r.leaders(o.Nodes)) == 1 || r.At >= reaction {
			break
		}
		wait(ctx, tick.C)
	}

	wctx, cancel := context.WithTimeout(ctx, watchFor)
	defer cancel()
	streams := make([]Stream, len(o.Nodes))
	var wg sync.WaitGroup
	for i, node := range o.Nodes {
		wg.Go(func() { streams[i] = ob.watch(wctx, node) })
	}
	for wctx.Err() == nil {
		wait(wctx, tick.C)
		o.Rounds = append(o.Rounds, ob.round(ctx))
	}
	wg.Wait()
	o.Streams = map[string]Stream{}
	for i, node := range o.Nodes {
		o.Streams[node] = streams[i]
	}
	if err := ctx.Err(); err != nil {
		return o, err
	}
	return o, ob.writes(ctx, &o)
}

// wait waits for the next tick, or ctx's end.
func wait(ctx context.Context, tick <-chan time.Time) {
	select {
	case <-ctx.Done():
	case <-tick:
	}
}

// writes writes through the leader the last round saw, alone, if any, and
// to every node it saw follow.
func (ob *observer) writes(ctx context.Context, o *Observation) error {
	last := o.Rounds[len(o.Rounds)-1]
	leaders := last.leaders(o.Nodes)
	for _, node := range o.Nodes {
		if slices.Contains(leaders, node) {
			continue
		}
		p, err := ob.probe(ctx, node, "conform-follower-"+node, 0)
		if err != nil {
			return err
		}
		o.Followers = append(o.Followers, p)
	}
	if len(leaders) != 1 {
		return nil
	}
	leader := leaders[0]
	before := ob.ask(ctx, leader, http.MethodGet, "/leader", nil)
	p, err := ob.probe(ctx, leader, "conform-leader", 0)
	if err != nil {
		return err
	}
	p.Around = []Answer{before, ob.ask(ctx, leader, http.MethodGet, "/leader", nil)}
	o.Leader = &p

	b, _ := before.belief(leader) // a token that does not read is 0
	f, err := ob.probe(ctx, leader, "conform-fenced", max(b.Token, 0)+plantAbove)
	if err != nil {
		return err
	}
	o.Fenced = &f
	if o.OwnData {
		o.Data = ob.data(ctx, leader, o.Nodes)
	}
	return nil
}

// data writes a key of conform's to the system's own register through
// leader, reads it back there, then on every other node until each shows
// it or refuses, or dataSettle passes.
func (ob *observer) data(ctx context.Context, leader string, nodes []string) *DataProbe {
	p := &DataProbe{Node: leader, Key: "conform-data", Value: "conform-data-by-" + leader, Reads: map[string]Answer{}}
	body, _ := json.Marshal(contract.DataWrite{Key: p.Key, Value: p.Value})
	p.Write = ob.ask(ctx, leader, http.MethodPost, contract.DataPath, body)
	read := contract.DataPath + "?key=" + p.Key
	p.Read = ob.ask(ctx, leader, http.MethodGet, read, nil)
	deadline := time.Now().Add(dataSettle)
	for _, node := range nodes {
		if node == leader {
			continue
		}
		for {
			a := ob.ask(ctx, node, http.MethodGet, read, nil)
			p.Reads[node] = a
			if a.Status == http.StatusConflict || p.holds(a) || time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			time.Sleep(pollEvery)
		}
	}
	return p
}

// holds says a read answered 200 with the probe's value.
func (p *DataProbe) holds(a Answer) bool {
	var ans contract.DataAnswer
	return a.Status == http.StatusOK && json.Unmarshal(a.Body, &ans) == nil && ans.Value == p.Value
}

// probe asks node to write a key of conform's, after writing it on the
// resource itself with token planted if that is above 0, and reads what
// the resource holds for the key after. An error is the resource's.
func (ob *observer) probe(ctx context.Context, node, key string, planted int64) (WriteProbe, error) {
	p := WriteProbe{Node: node, Key: key, Value: key + "-by-" + node, Planted: planted}
	if planted > 0 {
		if _, err := ob.res.Write(ctx, contract.ResourceWrite{Key: key, Value: key + "-planted", Token: planted, Node: "conform"}); err != nil {
			return p, fmt.Errorf("the resource: writing %s with token %d: %v", key, planted, err)
		}
	}
	body, err := json.Marshal(map[string]string{"key": p.Key, "value": p.Value})
	if err != nil {
		return p, err
	}
	p.Answer = ob.ask(ctx, node, http.MethodPost, "/write", body)
	if p.Held, err = ob.res.Read(ctx, key); err != nil {
		return p, fmt.Errorf("the resource: reading %s: %v", key, err)
	}
	return p, nil
}

// round asks every node GET /leader at once.
func (ob *observer) round(ctx context.Context) Round {
	at := time.Since(ob.began)
	return Round{At: at, Answers: ob.everyNode(ctx, http.MethodGet, "/leader")}
}

// everyNode asks every node the same, at once.
func (ob *observer) everyNode(ctx context.Context, method, path string) map[string]Answer {
	nodes := ob.cluster.Nodes()
	answers := make([]Answer, len(nodes))
	var wg sync.WaitGroup
	for i, node := range nodes {
		wg.Go(func() { answers[i] = ob.ask(ctx, node, method, path, nil) })
	}
	wg.Wait()
	out := make(map[string]Answer, len(nodes))
	for i, node := range nodes {
		out[node] = answers[i]
	}
	return out
}

// ask sends node one request and reads its whole answer.
func (ob *observer) ask(ctx context.Context, node, method, path string, body []byte) Answer {
	a := Answer{At: time.Since(ob.began)}
	req, err := http.NewRequestWithContext(ctx, method, ob.cluster.NodeURL(node)+path, bytes.NewReader(body))
	if err != nil {
		a.Err = err.Error()
		return a
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := ob.http.Do(req)
	if err != nil {
		a.Took, a.Err = time.Since(start), err.Error()
		return a
	}
	defer resp.Body.Close()
	a.Body, err = io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	a.Took = time.Since(start)
	if err != nil {
		a.Err = "reading the answer: " + err.Error()
		return a
	}
	a.Status = resp.StatusCode
	return a
}

// watch listens to node's watch until ctx ends.
func (ob *observer) watch(ctx context.Context, node string) Stream {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ob.cluster.NodeURL(node)+contract.WatchPath+"?every="+pollEvery.String(), nil)
	if err != nil {
		return Stream{Err: err.Error()}
	}
	resp, err := ob.streams.Do(req)
	if err != nil {
		return Stream{Err: err.Error()}
	}
	defer resp.Body.Close()
	s := Stream{Status: resp.StatusCode}
	if s.Status != http.StatusOK {
		return s
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		s.Lines = append(s.Lines, Line{Arrived: time.Since(start), Body: bytes.Clone(sc.Bytes())})
	}
	if ctx.Err() == nil {
		s.Err = fmt.Sprintf("the node ended the stream after %.2f s", time.Since(start).Seconds())
		if err := sc.Err(); err != nil {
			s.Err = fmt.Sprintf("the stream failed after %.2f s: %v", time.Since(start).Seconds(), err)
		}
	}
	return s
}
