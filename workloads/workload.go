// Package workloads drives the fenced-write workload against a cluster and observes who leads, recording both in the history.
package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/history"
)

// Cluster is what the workload needs to know of the system under test.
// Addresses can change when a node restarts, so they are asked each time.
type Cluster interface {
	Nodes() []string
	NodeURL(node string) string // base URL of the node API, "" if unknown
	ResourceURL() string
}

// Dialer is a Cluster whose addresses are reached through a dialer of its
// own (a gateway into a network that spans several Docker Engines).
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// dialerOf opens connections to the cluster's addresses, each bounded by
// timeout: through the cluster's own dialer when it has one.
func dialerOf(c Cluster, timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d, ok := c.(Dialer)
	if !ok {
		return (&net.Dialer{Timeout: timeout}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return d.DialContext(ctx, network, addr)
	}
}

// Config of the fenced-write workload.
type Config struct {
	Rate        float64       // operations per second across the cluster
	Concurrency int           // client processes
	Keys        int           // size of the key set
	ReadShare   float64       // share of operations that are reads
	Timeout     time.Duration // per operation; past it the outcome is unknown
	Seed        uint64
	// OwnData: the nodes serve the register in the system's own store
	// (contract.DataPath). Half the operations then go there, through a
	// node drawn for each, and ReadBack reads it on every node at the end.
	OwnData bool
}

// Stats counts what the workload did. Safe to read while it runs.
type Stats struct {
	Asked  atomic.Int64 // operations the rate asked for
	Issued atomic.Int64 // operations handed to a process
	OK     atomic.Int64
	Fail   atomic.Int64
	Info   atomic.Int64
}

// Writer runs the workload.
type Writer struct {
	cfg     Config
	cluster Cluster
	rec     *history.Recorder
	http    *http.Client
	Stats   Stats

	mu       sync.Mutex
	wrote    map[string]int64 // per node: when its latest accepted write returned
	newest   int64            // the highest token an acknowledged write carried
	lastProc int              // the highest process number used
}

// NewWriter returns a workload over cluster that records into rec.
func NewWriter(cfg Config, cluster Cluster, rec *history.Recorder) *Writer {
	tr := &http.Transport{
		MaxIdleConnsPerHost: cfg.Concurrency,
		DisableCompression:  true,
		// On the run's bridge a connection is made in well under a
		// millisecond; one that takes longer goes to a node that is gone
		// or cut off. Failing it early is safe (the node never saw the
		// request) and frees the process for the next operation.
		DialContext: dialerOf(cluster, min(cfg.Timeout, dialTimeout)),
	}
	return &Writer{cfg: cfg, cluster: cluster, rec: rec, http: &http.Client{Transport: tr}, wrote: map[string]int64{}}
}

const dialTimeout = 250 * time.Millisecond

type op struct {
	f, key string
}

// Run drives operations at the configured rate until ctx ends, then waits
// for the operations in flight. An operation the rate asks for while every
// process is busy is not queued: it counts as asked but not issued, so the
// achieved rate is honest.
func (w *Writer) Run(ctx context.Context) {
	ops := make(chan op, w.cfg.Concurrency)
	var wg sync.WaitGroup
	for i := 1; i <= w.cfg.Concurrency; i++ {
		wg.Add(1)
		go func(process int) {
			defer wg.Done()
			w.process(process, ops)
		}(i)
	}
	rng := rand.New(rand.NewPCG(w.cfg.Seed, 0x5eed))
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case now := <-tick.C:
			due := int64(now.Sub(start).Seconds()*w.cfg.Rate) - w.Stats.Asked.Load()
			for ; due > 0; due-- {
				w.Stats.Asked.Add(1)
				o := op{f: history.Write, key: fmt.Sprintf("k%d", rng.IntN(w.cfg.Keys))}
				read := rng.Float64() < w.cfg.ReadShare
				own := w.cfg.OwnData && rng.IntN(2) == 0
				switch {
				case own && read:
					o.f = history.DataRead
				case own:
					o.f = history.DataWrite
				case read:
					o.f = history.Read
				}
				select {
				case ops <- o:
					w.Stats.Issued.Add(1)
				default:
				}
			}
		}
	}
	close(ops)
	wg.Wait()
}

// process is one Jepsen process: one operation at a time. After an
// indeterminate outcome it takes a fresh process number, since the old
// one may still have an operation in flight as far as the history knows.
func (w *Writer) process(process int, ops <-chan op) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(process)))
	seq := 0
	for o := range ops {
		seq++
		w.used(process)
		inv := history.Event{Type: history.Invoke, Process: process, F: o.f, Key: o.key}
		var node string
		if o.f != history.Read {
			nodes := w.cluster.Nodes()
			node = nodes[rng.IntN(len(nodes))]
			inv.Node = node
		}
		if o.f == history.Write || o.f == history.DataWrite {
			inv.Value = fmt.Sprintf("p%d-%d", process, seq)
		}
		w.rec.Record(inv)
		var done history.Event
		switch o.f {
		case history.Write:
			done = w.write(node, o.key, inv.Value)
		case history.Read:
			done = w.read(o.key)
		case history.DataWrite:
			done = w.writeData(node, o.key, inv.Value)
		default:
			done = w.readData(node, o.key)
		}
		done.Process, done.F, done.Key = process, o.f, o.key
		done = w.rec.Record(done)
		switch done.Type {
		case history.OK:
			w.Stats.OK.Add(1)
			if o.f == history.Write {
				w.mu.Lock()
				w.wrote[done.Node] = done.Time
				w.newest = max(w.newest, done.Token)
				w.mu.Unlock()
			}
		case history.Fail:
			w.Stats.Fail.Add(1)
		default:
			w.Stats.Info.Add(1)
			process += w.cfg.Concurrency
		}
	}
}

// used notes that process took an operation, so that ReadBack's
// processes come after every one the workload used.
func (w *Writer) used(process int) {
	w.mu.Lock()
	w.lastProc = max(w.lastProc, process)
	w.mu.Unlock()
}

// ReadBack reads every key of the system's own register on every node,
// each node's keys in turn on a process of its own, after the workload has
// stopped: what the store holds at the end, so that an acknowledged write
// that is gone shows. It returns once every read is recorded.
func (w *Writer) ReadBack() {
	if !w.cfg.OwnData {
		return
	}
	w.mu.Lock()
	first := w.lastProc + 1
	w.mu.Unlock()
	var wg sync.WaitGroup
	for i, node := range w.cluster.Nodes() {
		wg.Go(func() {
			process := first + i
			for k := range w.cfg.Keys {
				key := fmt.Sprintf("k%d", k)
				w.rec.Record(history.Event{Type: history.Invoke, Process: process, F: history.DataRead, Key: key, Node: node})
				done := w.readData(node, key)
				done.Process, done.F, done.Key = process, history.DataRead, key
				w.rec.Record(done)
			}
		})
	}
	wg.Wait()
}

// NewestToken is the highest token a fenced write that was acknowledged
// carried so far: a sole leader below it leads a leadership older than one
// that wrote.
func (w *Writer) NewestToken() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.newest
}

// Wrote names the nodes whose latest accepted write returned within maxAge:
// those that write as leaders right now.
func (w *Writer) Wrote(maxAge time.Duration) map[string]bool {
	now := w.rec.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]bool{}
	for n, t := range w.wrote {
		if now-t <= int64(maxAge) {
			out[n] = true
		}
	}
	return out
}

// write asks node to make a fenced write and classifies the answer by the
// node API: 200 ok, 409 not leader, 412 fenced, anything else unknown.
func (w *Writer) write(node, key, value string) history.Event {
	var ans contract.WriteAnswer
	e, status, answered := w.post(node, value, contract.WritePath, contract.WriteRequest{Key: key, Value: value}, &ans)
	switch {
	case !answered:
	case status == http.StatusOK:
		e.Type, e.Token, e.Seq = history.OK, ans.Token, ans.Seq
	case status == http.StatusConflict || status == http.StatusPreconditionFailed || status == http.StatusBadRequest:
		e.Type, e.Token, e.Error = history.Fail, ans.Token, ans.Error
	default:
		e.Type, e.Error = history.Info, fmt.Sprintf("%d %s", status, ans.Error)
	}
	return e
}

// post sends node a write of value on path, its answer decoded into ans.
// Unanswered (a node with no address, a transport error), e is already
// the write's outcome; answered, e holds the node and value and the
// caller classifies status.
func (w *Writer) post(node, value, path string, req, ans any) (e history.Event, status int, answered bool) {
	e = history.Event{Node: node, Value: value}
	base := w.cluster.NodeURL(node)
	if base == "" {
		e.Type, e.Error = history.Fail, "unreachable"
		return e, 0, false
	}
	body, _ := json.Marshal(req)
	status, err := w.call(http.MethodPost, base+path, string(body), ans)
	if err != nil {
		e.Type, e.Error = outcome(err), err.Error()
		return e, 0, false
	}
	return e, status, true
}

// read reads a register straight from the resource, so the history holds
// what the register really held. A failed read changed nothing: it fails.
func (w *Writer) read(key string) history.Event {
	var reg contract.Register
	status, err := w.call(http.MethodGet, w.cluster.ResourceURL()+"/read?key="+key, "", &reg)
	if err != nil || status != http.StatusOK {
		msg := fmt.Sprintf("status %d", status)
		if err != nil {
			msg = err.Error()
		}
		return history.Event{Type: history.Fail, Error: msg}
	}
	return history.Event{Type: history.OK, Value: reg.Value, Token: reg.Token, Node: reg.Node, Seq: reg.Seq}
}

// writeData asks node to write to the system's own store: 200 ok, 409
// refused for not leading, 400 malformed, anything else unknown.
func (w *Writer) writeData(node, key, value string) history.Event {
	var ans contract.DataAnswer
	e, status, answered := w.post(node, value, contract.DataPath, contract.DataWrite{Key: key, Value: value}, &ans)
	switch {
	case !answered:
	case status == http.StatusOK:
		e.Type = history.OK
	case status == http.StatusConflict || status == http.StatusBadRequest:
		e.Type, e.Error = history.Fail, ans.Error
	default:
		e.Type, e.Error = history.Info, fmt.Sprintf("%d %s", status, ans.Error)
	}
	return e
}

// readData reads the system's own register through node. A read that was
// not answered 200 changed nothing: it fails.
func (w *Writer) readData(node, key string) history.Event {
	base := w.cluster.NodeURL(node)
	if base == "" {
		return history.Event{Type: history.Fail, Node: node, Error: "unreachable"}
	}
	var ans contract.DataAnswer
	status, err := w.call(http.MethodGet, base+contract.DataPath+"?key="+key, "", &ans)
	switch {
	case err != nil:
		return history.Event{Type: history.Fail, Node: node, Error: err.Error()}
	case status != http.StatusOK:
		return history.Event{Type: history.Fail, Node: node, Error: fmt.Sprintf("%d %s", status, ans.Error)}
	}
	return history.Event{Type: history.OK, Node: node, Value: ans.Value}
}

func (w *Writer) call(method, url, body string, into any) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(into) // an unreadable body leaves zero values; the status decides
	return resp.StatusCode, nil
}

// outcome classifies a transport error: a request that could not even be
// connected was never seen by the node and certainly failed; anything
// later (a timeout, a reset) leaves the outcome unknown.
func outcome(err error) history.Type {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return history.Fail
	}
	return history.Info
}
