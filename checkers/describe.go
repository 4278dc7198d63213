package checkers

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxStored is how many violations (and windows) a Result keeps. A broken
// target can produce hundreds of thousands; the first ones tell the story
// and Figures count them all.
const maxStored = 100

// finding is a violation detected but not yet described. Checkers collect
// findings cheaply and format only the ones they keep: fmt is the costly
// part, and a broken target can produce a finding per event.
type finding interface {
	// when orders findings: the time it happened, then a tie-breaker (an
	// event index or a seq).
	when() (at, order int64)
}

// describeFirst sorts fs by when and describes the first maxStored.
func describeFirst[T finding](fs []T, describe func(T) Violation) []Violation {
	slices.SortStableFunc(fs, func(p, q T) int {
		pa, po := p.when()
		qa, qo := q.when()
		return cmp.Or(cmp.Compare(pa, qa), cmp.Compare(po, qo))
	})
	n := min(len(fs), maxStored)
	if n == 0 {
		return nil
	}
	out := make([]Violation, n)
	for i := range n {
		out[i] = describe(fs[i])
	}
	return out
}

// secs formats ns since run start as seconds with 3 decimals: "31.204 s".
func secs(ns int64) string {
	return strconv.FormatFloat(float64(ns)/1e9, 'f', 3, 64) + " s"
}

// seconds converts ns to float seconds for Figures.
func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// notes joins the sentences that are not empty.
func notes(ss ...string) string {
	var b strings.Builder
	for _, s := range ss {
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

// capNote says that only the first maxStored of n things are shown.
func capNote(n int, what string) string {
	if n <= maxStored {
		return ""
	}
	return fmt.Sprintf("Showing the first %d of %d %s.", maxStored, n, what)
}

// sortedUnique sorts xs and drops repeats and negative entries (the
// "no such event" marker).
func sortedUnique(xs []int64) []int64 {
	xs = slices.DeleteFunc(xs, func(x int64) bool { return x < 0 })
	slices.Sort(xs)
	xs = slices.Compact(xs)
	if len(xs) == 0 {
		return nil
	}
	return xs
}
