package results

import (
	"math"
	"slices"
)

// A screen shows a few thousand columns at most, so the timeline is drawn
// in time buckets: a long run's million events become a few thousand
// marks, and zooming in shows buckets, not events. Nothing is left out:
// every write, belief and overlap lands in some bucket.
const (
	timelineBuckets = 4000
	chartBuckets    = 400
)

// resolution is the bucket width that splits [0, end] into at most n
// buckets: 1, 2 or 5 times a power of ten, at least 1 ms.
func resolution(end int64, n int) int64 {
	for r := int64(1e6); ; r *= 10 {
		for _, m := range []int64{1, 2, 5} {
			if end/(r*m) < int64(n) {
				return r * m
			}
		}
	}
}

// mergeBars draws each node's intervals, merging those of one token that a
// gap shorter than res separates.
func mergeBars(bars []bar, nodes int, res int64) [][]beliefBar {
	out := make([][]beliefBar, nodes)
	for _, b := range bars { // sorted by start
		l := out[b.Node]
		if n := len(l); n > 0 && l[n-1].Token == b.Token && b.From-l[n-1].To < res {
			l[n-1].To = max(l[n-1].To, b.To)
			l[n-1].Merged++
			continue
		}
		out[b.Node] = append(l, beliefBar{span: b.span, Token: b.Token, Merged: 1})
	}
	return out
}

// leaderRuns sums every node's bars up for the leaders row: in each bucket
// the token believed longest (a proof of no length counts a little), in runs
// of buckets with the same token. However much leadership flaps, the row
// holds at most one mark per bucket.
func leaderRuns(bars []bar, end, res int64) []beliefBar {
	type best struct {
		token int64
		held  int64 // ns of the bucket; 0: nobody
	}
	buckets := make([]best, int(end/res)+1)
	for _, b := range bars {
		last := b.From / res
		if b.To > b.From {
			last = (b.To - 1) / res // a bar that ends on a bucket's edge stays out of it
		}
		for i := b.From / res; i <= last && int(i) < len(buckets); i++ {
			held := max(min(b.To, (i+1)*res)-max(b.From, i*res), 1)
			if held > buckets[i].held {
				buckets[i] = best{b.Token, held}
			}
		}
	}
	var out []beliefBar
	for i, b := range buckets {
		if b.held == 0 {
			continue
		}
		from := int64(i) * res
		if n := len(out); n > 0 && out[n-1].Token == b.token && out[n-1].To == from {
			out[n-1].To = from + res
			continue
		}
		out = append(out, beliefBar{span: span{from, from + res}, Token: b.token})
	}
	return out
}

// mergeOverlaps joins overlaps closer than res, with all their nodes.
func mergeOverlaps(os []overlap, res int64) []overlap {
	var out []overlap
	for _, o := range os {
		if n := len(out); n > 0 && o.From-out[n-1].To < res {
			last := &out[n-1]
			last.To = max(last.To, o.To)
			for _, node := range o.Nodes {
				if !slices.Contains(last.Nodes, node) {
					last.Nodes = append(last.Nodes, node)
				}
			}
			continue
		}
		out = append(out, overlap{span: o.span, Nodes: slices.Clone(o.Nodes)})
	}
	for i := range out {
		slices.Sort(out[i].Nodes)
	}
	return out
}

// mergeSpans joins spans closer than res.
func mergeSpans(ss []span, res int64) []span {
	var out []span
	for _, s := range ss {
		if n := len(out); n > 0 && s.From-out[n-1].To < res {
			out[n-1].To = max(out[n-1].To, s.To)
			continue
		}
		out = append(out, s)
	}
	return out
}

// writeRuns gives, per node and outcome, the runs of buckets of width res
// that hold at least one write. A write is placed when it was sent, as the
// checkers time the writes they blame, so a stale write sits on its mark
// even when its answer came a timeout later.
func writeRuns(ops []op, nodes int, end, res int64) [][outcomes][]span {
	buckets := int(end/res) + 1
	words := (buckets + 63) / 64
	seen := make([][outcomes][]uint64, nodes)
	for _, o := range ops {
		if !o.Write || o.Node < 0 || o.At < 0 {
			continue
		}
		bits := &seen[o.Node][o.Kind]
		if *bits == nil {
			*bits = make([]uint64, words)
		}
		b := int(max(o.At-o.Took, 0) / res)
		(*bits)[b/64] |= 1 << (b % 64)
	}
	out := make([][outcomes][]span, nodes)
	for n := range seen {
		for k, bits := range seen[n] {
			from := -1
			for b := 0; b <= buckets; b++ {
				set := b < buckets && bits != nil && bits[b/64]&(1<<(b%64)) != 0
				switch {
				case set && from < 0:
					from = b
				case !set && from >= 0:
					out[n][k] = append(out[n][k], span{int64(from) * res, int64(b) * res})
					from = -1
				}
			}
		}
	}
	return out
}

// bucketStats are one chart bucket's figures.
type bucketStats struct {
	count [outcomes]int // completions by outcome (fenced counts as failed)
	p50   float64       // latency of acknowledged operations, ms; NaN if none
	p99   float64
	max   float64 // of every completion, ms; NaN if none
}

// chartStats buckets the completions by width res.
func chartStats(ops []op, end, res int64) []bucketStats {
	stats := make([]bucketStats, int(end/res)+1)
	okLat := make([][]float64, len(stats))
	for i := range stats {
		stats[i].max = math.NaN()
	}
	for _, o := range ops {
		if o.At < 0 {
			continue
		}
		i := int(o.At / res)
		st := &stats[i]
		kind := o.Kind
		if kind == fenced {
			kind = failed
		}
		st.count[kind]++
		took := float64(o.Took) / 1e6
		if math.IsNaN(st.max) || took > st.max {
			st.max = took
		}
		if o.Kind == accepted {
			okLat[i] = append(okLat[i], took)
		}
	}
	for i, l := range okLat {
		stats[i].p50, stats[i].p99 = quantile(l, 0.5), quantile(l, 0.99)
	}
	return stats
}

// quantile sorts xs and returns its q-quantile (nearest rank), NaN if empty.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(i, 0)]
}
