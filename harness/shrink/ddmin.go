package shrink

import "slices"

// ddmin is Zeller's delta debugging: the smallest subsequence of items it
// finds for which test holds, test being assumed to hold for items. It
// tries each of n chunks alone, then each complement of one, and splits
// finer when neither holds, down to single items; removing any single
// item of what it returns makes test fail (1-minimal), as far as the
// tests said.
func ddmin[T any](items []T, test func([]T) bool) []T {
	n := 2
	for len(items) >= 2 {
		chunks := split(items, n)
		reduced := false
		for _, c := range chunks {
			if test(c) {
				items, n, reduced = c, 2, true
				break
			}
		}
		if !reduced && n > 2 {
			for i := range chunks {
				rest := slices.Concat(slices.Concat(chunks[:i]...), slices.Concat(chunks[i+1:]...))
				if test(rest) {
					items, n, reduced = rest, max(n-1, 2), true
					break
				}
			}
		}
		if !reduced {
			if n >= len(items) {
				break
			}
			n = min(2*n, len(items))
		}
	}
	return items
}

// split cuts items into n chunks of nearly equal length, in order.
func split[T any](items []T, n int) [][]T {
	var out [][]T
	for i := range n {
		from, to := i*len(items)/n, (i+1)*len(items)/n
		if to > from {
			out = append(out, slices.Clone(items[from:to]))
		}
	}
	return out
}
