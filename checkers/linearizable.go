package checkers

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/splitbrain/splitbrain/history"
)

// LinearizabilityFile is the name of porcupine's view of a violation.
const LinearizabilityFile = "linearizability.html"

// maxVisualizedKeys bounds the keys drawn in LinearizabilityFile: the view
// of one key already shows the violation, and each key adds megabytes.
const maxVisualizedKeys = 3

// never is the return time of an operation whose outcome is unknown: it may
// take effect at any moment after its invoke, or not at all.
const never = math.MaxInt64

// Linearizable checks, key by key, that reads and writes behave like one
// fenced register per key: a write with token t takes effect only if t is at
// least the token the register holds, and a read returns what it holds.
// budget bounds the search; past it the result is Unknown.
//
// Writes that failed took no effect and are left out. An indeterminate write
// may take effect at any time after its invoke; its token comes from the
// resource log (or a read that saw its value). One the resource refused, or
// whose value nobody ever read, cannot change any read and is left out too:
// each indeterminate operation doubles porcupine's search space.
func Linearizable(budget time.Duration) func(Input) Result {
	return func(in Input) Result {
		return checkLinearizable(in, budget)
	}
}

// regState is the fenced register of one key.
type regState struct {
	Value string
	Token int64
}

// regInput is one operation on the register; Output is a regState for a
// read and unused for a write.
type regInput struct {
	Write   bool
	Value   string
	Token   int64
	Unknown bool // an indeterminate write: refused silently when stale
}

// opRef ties a porcupine operation back to the history.
type opRef struct {
	Invoke, Done int64 // event indices; Done is -1 if the history has none
	Process      int
	Node         string
}

var registerModel = porcupine.Model{
	Init: func() any { return regState{} },
	Step: func(state, input, output any) (bool, any) {
		s, in := state.(regState), input.(regInput)
		switch {
		case !in.Write:
			return output.(regState) == s, s
		case in.Token >= s.Token:
			return true, regState{Value: in.Value, Token: in.Token}
		case in.Unknown:
			return true, s // the fence refused it: nothing changed
		}
		return false, s // acknowledged, yet a fenced register refuses it
	},
	DescribeOperation: func(input, output any) string {
		in := input.(regInput)
		if !in.Write {
			out := output.(regState)
			return fmt.Sprintf("read -> %q (token %d)", out.Value, out.Token)
		}
		if in.Unknown {
			return fmt.Sprintf("write %q (token %d) -> ?", in.Value, in.Token)
		}
		return fmt.Sprintf("write %q (token %d) -> ok", in.Value, in.Token)
	},
	DescribeState: func(state any) string {
		s := state.(regState)
		return fmt.Sprintf("%q (token %d)", s.Value, s.Token)
	},
	DescribeOperationMetadata: func(info any) string {
		r, ok := info.(opRef)
		if !ok {
			return ""
		}
		return fmt.Sprintf("process %d, events %d-%d, node %s", r.Process, r.Invoke, r.Done, r.Node)
	},
}

// keyOps is the history of one key as porcupine operations.
type keyOps struct {
	key string
	ops []porcupine.Operation
}

func checkLinearizable(in Input, budget time.Duration) Result {
	keys, figures := operations(in)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()

	verdicts := make([]porcupine.CheckResult, len(keys))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(len(keys), 1)) {
		wg.Go(func() {
			for i := range work {
				verdicts[i] = checkKey(ctx, keys[i].ops)
			}
		})
	}
feed:
	for i := range keys {
		select {
		case work <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()

	res := Result{Valid: Valid, Figures: figures}
	var illegal []keyOps
	for i, v := range verdicts {
		switch v {
		case porcupine.Ok:
			res.Figures["keys_checked"]++
		case porcupine.Illegal:
			res.Figures["keys_checked"]++
			illegal = append(illegal, keys[i])
		default: // timed out, or never started
			res.Figures["keys_unknown"]++
		}
	}
	res.Figures["keys"] = float64(len(keys))
	res.Figures["violations"] = float64(len(illegal))
	switch {
	case len(illegal) > 0:
		res.Valid = Invalid
		res.Violations, res.Files = explain(in.History, illegal, budget)
	case res.Figures["keys_unknown"] > 0:
		res.Valid = Unknown
		res.Note = fmt.Sprintf("the search ran out of its %s budget (--check-timeout) with %.0f of %d keys checked, all linearizable so far",
			budget, res.Figures["keys_checked"], len(keys))
	}
	if res.Note == "" {
		res.Note = fmt.Sprintf("%.0f operations over %d keys; %.0f indeterminate writes left out because the resource refused them or no read saw their value",
			res.Figures["operations"], len(keys), res.Figures["indeterminate_left_out"])
	}
	return res
}

// checkKey runs porcupine on one key until ctx ends.
func checkKey(ctx context.Context, ops []porcupine.Operation) porcupine.CheckResult {
	deadline, _ := ctx.Deadline()
	left := time.Until(deadline)
	if left <= 0 {
		return porcupine.Unknown
	}
	return porcupine.CheckOperationsTimeout(registerModel, ops, left)
}

// operations turns the history into per-key porcupine operations, keys in
// name order, with counts for the figures. A target's own register
// (DataWrite, DataRead) is a register apart from the resource's, keyed
// ownKey, with no token: every write it acknowledged takes effect.
func operations(in Input) ([]keyOps, map[string]float64) {
	h := in.History
	figures := map[string]float64{"operations": 0, "indeterminate_left_out": 0}

	// What the resource decided for each value: values are unique per run.
	decided := make(map[string]history.Decision, len(in.Resource))
	for _, d := range in.Resource {
		decided[d.Value] = d
	}
	// The token stored with each value that a read returned.
	readToken := map[string]int64{}
	for i := range h {
		if e := &h[i]; e.Type == history.OK && (e.F == history.Read || e.F == history.DataRead) && e.Value != "" {
			readToken[e.Value] = e.Token
		}
	}

	byKey := map[string][]porcupine.Operation{}
	open := map[int]int{} // process -> index of its invoke
	add := func(inv, done int, input regInput, output any, ret int64) {
		e := &h[inv]
		key := e.Key
		if isOwn(e.F) {
			key = ownKey(key)
		}
		byKey[key] = append(byKey[key], porcupine.Operation{
			ClientId: e.Process, Input: input, Call: e.Time, Output: output, Return: ret,
			Metadata: opRef{Invoke: int64(inv), Done: int64(done), Process: e.Process, Node: e.Node},
		})
		figures["operations"]++
	}
	// indeterminate adds a write whose outcome is unknown, if it can matter:
	// the resource did not refuse it and some read saw its value.
	indeterminate := func(inv, done int) {
		e := &h[inv]
		token, read := readToken[e.Value]
		d, isDecided := decided[e.Value]
		if !read || isDecided && !d.Accepted {
			figures["indeterminate_left_out"]++
			return
		}
		if isDecided {
			token = d.Token
		}
		add(inv, done, regInput{Write: true, Value: e.Value, Token: token, Unknown: true}, regState{}, never)
	}

	for i := range h {
		e := &h[i]
		switch e.Type {
		case history.Invoke:
			switch e.F {
			case history.Read, history.Write, history.DataRead, history.DataWrite:
				open[e.Process] = i
			}
			continue
		case history.OK, history.Fail, history.Info:
		default:
			continue
		}
		inv, ok := open[e.Process]
		if !ok {
			continue
		}
		delete(open, e.Process)
		iv := &h[inv]
		read, write := iv.F == history.Read || iv.F == history.DataRead, iv.F == history.Write || iv.F == history.DataWrite
		switch {
		case read && e.Type == history.OK:
			add(inv, i, regInput{}, regState{Value: e.Value, Token: e.Token}, e.Time)
		case write && e.Type == history.OK:
			token := e.Token
			if d, ok := decided[iv.Value]; token == 0 && ok {
				token = d.Token
			}
			add(inv, i, regInput{Write: true, Value: iv.Value, Token: token}, regState{}, e.Time)
		case write && e.Type == history.Info:
			indeterminate(inv, i)
		}
	}
	// Writes still open when the history ended are indeterminate too.
	for _, inv := range open {
		if f := h[inv].F; f == history.Write || f == history.DataWrite {
			indeterminate(inv, -1)
		}
	}

	keys := make([]keyOps, 0, len(byKey))
	for k, ops := range byKey {
		keys = append(keys, keyOps{key: k, ops: ops})
	}
	slices.SortFunc(keys, func(a, b keyOps) int { return cmp.Compare(a.key, b.key) })
	return keys, figures
}

// isOwn says an operation is on the target's own register.
func isOwn(f string) bool { return f == history.DataRead || f == history.DataWrite }

// ownKey names key of the target's own register apart from the resource's.
func ownKey(key string) string { return key + " (own data)" }

// explain finds, for each key that is not linearizable, the operation no
// order can explain, and draws porcupine's view of the first keys with
// splitbrain's faults and leader changes on it.
func explain(h []history.Event, illegal []keyOps, budget time.Duration) ([]Violation, map[string][]byte) {
	illegal = illegal[:min(len(illegal), maxStored)]
	shown := min(len(illegal), maxVisualizedKeys)
	// The search already failed within the budget on these keys; the
	// verbose one repeats it, recording the longest prefixes it found. The
	// keys drawn go through one search, so that one view holds them all.
	model, info := verbose(illegal[:shown], budget)
	var out []Violation
	for i, part := range info.PartialLinearizationsOperations() {
		out = append(out, culprit(illegal[i], part))
	}
	for _, k := range illegal[shown:] {
		_, more := verbose([]keyOps{k}, budget)
		out = append(out, culprit(k, more.PartialLinearizationsOperations()[0]))
	}
	slices.SortStableFunc(out, func(a, b Violation) int { return cmp.Compare(a.Time, b.Time) })

	info.AddAnnotations(annotations(h))
	var buf bytes.Buffer
	if err := porcupine.Visualize(model, info, &buf); err != nil {
		return out, nil
	}
	return out, map[string][]byte{LinearizabilityFile: buf.Bytes()}
}

// verbose checks keys again, one partition each, keeping what porcupine
// needs to explain and draw them.
func verbose(keys []keyOps, budget time.Duration) (porcupine.Model, porcupine.LinearizationInfo) {
	model := registerModel
	model.Partition = func([]porcupine.Operation) [][]porcupine.Operation {
		parts := make([][]porcupine.Operation, len(keys))
		for i, k := range keys {
			parts[i] = k.ops
		}
		return parts
	}
	var all []porcupine.Operation
	for _, k := range keys {
		all = append(all, k.ops...)
	}
	_, info := porcupine.CheckOperationsVerbose(model, all, budget)
	return model, info
}

// culprit describes the violation on one key: of the operations the
// longest linearizable prefix leaves out, the one that had to take effect
// first (the earliest return) could not, given the state the prefix leaves.
func culprit(k keyOps, partials [][]porcupine.Operation) Violation {
	longest := slices.MaxFunc(append(partials, nil), func(a, b []porcupine.Operation) int { return cmp.Compare(len(a), len(b)) })
	placed := make(map[int64]bool, len(longest))
	state := registerModel.Init()
	var setter *opRef // the write that left the prefix's state
	for _, op := range longest {
		r := op.Metadata.(opRef)
		placed[r.Invoke] = true
		_, state = registerModel.Step(state, op.Input, op.Output)
		if op.Input.(regInput).Write {
			setter = &r
		}
	}
	var stuck *porcupine.Operation
	for i := range k.ops {
		op := &k.ops[i]
		if placed[op.Metadata.(opRef).Invoke] {
			continue
		}
		if stuck == nil || op.Return < stuck.Return || op.Return == stuck.Return && op.Call < stuck.Call {
			stuck = op
		}
	}
	v := Violation{Kind: "not-linearizable", Time: k.ops[0].Call}
	if stuck == nil { // porcupine found no prefix to blame; name the key
		v.Message = fmt.Sprintf("no order of the operations on %s explains what they returned", k.key)
		return v
	}
	r, in, held := stuck.Metadata.(opRef), stuck.Input.(regInput), state.(regState)
	v.Time = stuck.Call
	v.Events = []int64{r.Invoke}
	if r.Done >= 0 {
		v.Events = append(v.Events, r.Done)
	}
	if setter != nil {
		v.Events = append(v.Events, setter.Invoke, setter.Done)
	}
	slices.Sort(v.Events)
	v.Events = slices.Compact(v.Events)
	at := float64(stuck.Call) / 1e9
	if in.Write {
		v.Nodes = []string{r.Node}
		v.Message = fmt.Sprintf("%s acknowledged a write of %q to %s with token %d (process %d at %.3f s), but the register already held %q with token %d: a fenced register refuses a lower token",
			r.Node, in.Value, k.key, in.Token, r.Process, at, held.Value, held.Token)
		return v
	}
	got := stuck.Output.(regState)
	v.Message = fmt.Sprintf("process %d read %s at %.3f s and got %s, but no order of the writes explains it: the register held %s",
		r.Process, k.key, at, got, held)
	return v
}

// String says what a register held: its value, with its token if any (a
// target's own register has none).
func (s regState) String() string {
	if s.Token == 0 {
		return fmt.Sprintf("%q", s.Value)
	}
	return fmt.Sprintf("%q with token %d", s.Value, s.Token)
}

// annotations marks faults (from inject to heal) and leader changes on
// porcupine's view, so a reader sees what the cluster went through.
func annotations(h []history.Event) []porcupine.Annotation {
	var out []porcupine.Annotation
	injected := map[string]int{} // fault -> its annotation, until healed
	var leader string
	var token int64
	for i := range h {
		e := &h[i]
		switch {
		case e.Type == history.Nemesis && e.Phase == history.Inject:
			injected[e.F] = len(out)
			out = append(out, porcupine.Annotation{
				Tag: "nemesis", Start: e.Time, End: e.Time, Description: e.F,
				Details: e.Value, BackgroundColor: "#f3d9a4",
			})
		case e.Type == history.Nemesis && e.Phase == history.Heal:
			if a, ok := injected[e.F]; ok {
				out[a].End = e.Time
				delete(injected, e.F)
			}
		case e.Type == history.Leader && e.IsLeader && e.Error == "" && (e.Node != leader || e.Token != token) && e.Token >= token:
			leader, token = e.Node, e.Token
			out = append(out, porcupine.Annotation{
				Tag: "leader", Start: e.Time, End: e.Time,
				Description:     fmt.Sprintf("%s leads (token %d)", e.Node, e.Token),
				BackgroundColor: "#cfe3f7",
			})
		}
	}
	return out
}
