package nemesis

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// nodeNames returns n1..nN.
func nodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("n%d", i+1)
	}
	return out
}

// dropAll is the Drops of a node dropping every packet of the given nodes.
func dropAll(nodes ...string) Drops { return Drops{All: nodes} }

func testRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0)) }

// checkWellFormed checks what holds for every grudge: names come from nodes
// (or are the resource), no node drops itself, lists are sorted and distinct.
func checkWellFormed(t *testing.T, g Grudge, nodes []string) {
	t.Helper()
	known := func(n string) bool { return n == GrudgeResource || slices.Contains(nodes, n) }
	for a, d := range g {
		if !known(a) {
			t.Errorf("unknown node %q in %v", a, g)
		}
		for _, list := range [][]string{d.All, d.Initiated} {
			if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
				t.Errorf("%s: list %v not sorted and distinct", a, list)
			}
			for _, b := range list {
				if b == a {
					t.Errorf("%s drops itself", a)
				}
				if !known(b) {
					t.Errorf("%s drops unknown node %q", a, b)
				}
			}
		}
	}
}

// checkSymmetric checks that a drops all of b iff b drops all of a, and that
// nothing is one-way.
func checkSymmetric(t *testing.T, g Grudge) {
	t.Helper()
	for a, d := range g {
		if len(d.Initiated) > 0 {
			t.Errorf("%s has one-way drops %v", a, d.Initiated)
		}
		for _, b := range d.All {
			if !slices.Contains(g[b].All, a) {
				t.Errorf("%s drops %s but not the other way round", a, b)
			}
		}
	}
}

// reach returns the nodes a can exchange packets with, itself included.
func reach(g Grudge, nodes []string, a string) []string {
	return slices.DeleteFunc(slices.Clone(nodes), func(b string) bool {
		return slices.Contains(g[a].All, b) || slices.Contains(g[b].All, a)
	})
}

func TestDeterministicShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  Grudge
		want Grudge
	}{
		{"isolate 3", IsolateNode(nodeNames(3), "n2"), Grudge{
			"n1": dropAll("n2"),
			"n2": dropAll("n1", "n3"),
			"n3": dropAll("n2"),
		}},
		{"isolate 5", IsolateNode(nodeNames(5), "n1"), Grudge{
			"n1": dropAll("n2", "n3", "n4", "n5"),
			"n2": dropAll("n1"), "n3": dropAll("n1"), "n4": dropAll("n1"), "n5": dropAll("n1"),
		}},
		{"isolate 7", IsolateNode(nodeNames(7), "n7"), Grudge{
			"n1": dropAll("n7"), "n2": dropAll("n7"), "n3": dropAll("n7"),
			"n4": dropAll("n7"), "n5": dropAll("n7"), "n6": dropAll("n7"),
			"n7": dropAll("n1", "n2", "n3", "n4", "n5", "n6"),
		}},
		{"isolate the only node", IsolateNode([]string{"n1"}, "n1"), Grudge{"n1": {}}},
		{"components 3", Components([]string{"n1"}, []string{"n2"}, []string{"n3"}), Grudge{
			"n1": dropAll("n2", "n3"),
			"n2": dropAll("n1", "n3"),
			"n3": dropAll("n1", "n2"),
		}},
		{"components 5", Components([]string{"n1", "n2"}, []string{"n3", "n4", "n5"}), Grudge{
			"n1": dropAll("n3", "n4", "n5"), "n2": dropAll("n3", "n4", "n5"),
			"n3": dropAll("n1", "n2"), "n4": dropAll("n1", "n2"), "n5": dropAll("n1", "n2"),
		}},
		{"components 7", Components([]string{"n1", "n4", "n7"}, []string{"n2", "n5"}, []string{"n3", "n6"}), Grudge{
			"n1": dropAll("n2", "n3", "n5", "n6"),
			"n2": dropAll("n1", "n3", "n4", "n6", "n7"),
			"n3": dropAll("n1", "n2", "n4", "n5", "n7"),
			"n4": dropAll("n2", "n3", "n5", "n6"),
			"n5": dropAll("n1", "n3", "n4", "n6", "n7"),
			"n6": dropAll("n1", "n2", "n4", "n5", "n7"),
			"n7": dropAll("n2", "n3", "n5", "n6"),
		}},
		{"isolated 3", Isolated([]string{"n3", "n1", "n2"}), Grudge{
			"n1": dropAll("n2", "n3"),
			"n2": dropAll("n1", "n3"),
			"n3": dropAll("n1", "n2"),
		}},
		{"isolated 5", Isolated(nodeNames(5)), Grudge{
			"n1": dropAll("n2", "n3", "n4", "n5"),
			"n2": dropAll("n1", "n3", "n4", "n5"),
			"n3": dropAll("n1", "n2", "n4", "n5"),
			"n4": dropAll("n1", "n2", "n3", "n5"),
			"n5": dropAll("n1", "n2", "n3", "n4"),
		}},
		{"isolated alone", Isolated([]string{"n1"}), Grudge{"n1": {}}},
		{"isolated none", Isolated(nil), Grudge{}},
		{"one component", Components(nodeNames(3)), Grudge{"n1": {}, "n2": {}, "n3": {}}},
		{"overlapping components", Components([]string{"n1", "n2"}, []string{"n2", "n3"}), Grudge{
			"n1": dropAll("n3"), "n2": {}, "n3": dropAll("n1"),
		}},
		{"one-way 3", OneWay(nodeNames(3), "n1"), Grudge{
			"n1": {},
			"n2": {Initiated: []string{"n1"}},
			"n3": {Initiated: []string{"n1"}},
		}},
		{"one-way 5", OneWay(nodeNames(5), "n3"), Grudge{
			"n1": {Initiated: []string{"n3"}}, "n2": {Initiated: []string{"n3"}},
			"n3": {},
			"n4": {Initiated: []string{"n3"}}, "n5": {Initiated: []string{"n3"}},
		}},
		{"one-way 7", OneWay(nodeNames(7), "n7"), Grudge{
			"n1": {Initiated: []string{"n7"}}, "n2": {Initiated: []string{"n7"}},
			"n3": {Initiated: []string{"n7"}}, "n4": {Initiated: []string{"n7"}},
			"n5": {Initiated: []string{"n7"}}, "n6": {Initiated: []string{"n7"}},
			"n7": {},
		}},
		{"cut from resource", CutFromResource("n3"), Grudge{"n3": dropAll("resource")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got  %#v\nwant %#v", tc.got, tc.want)
			}
			checkWellFormed(t, tc.got, nodeNames(7))
		})
	}
}

func TestDeterministicShapeProperties(t *testing.T) {
	for _, n := range []int{3, 5, 7} {
		nodes := nodeNames(n)
		for _, v := range nodes {
			g := IsolateNode(nodes, v)
			checkWellFormed(t, g, nodes)
			checkSymmetric(t, g)
			if r := reach(g, nodes, v); !slices.Equal(r, []string{v}) {
				t.Errorf("isolated %s still reaches %v", v, r)
			}

			ow := OneWay(nodes, v)
			checkWellFormed(t, ow, nodes)
			for a, d := range ow {
				if len(d.All) > 0 {
					t.Errorf("one-way: %s drops all of %v", a, d.All)
				}
				want := []string{v}
				if a == v {
					want = nil
				}
				if !slices.Equal(d.Initiated, want) {
					t.Errorf("one-way from %s: %s drops initiated %v, want %v", v, a, d.Initiated, want)
				}
			}
			if len(ow) != n {
				t.Errorf("one-way: %d entries for %d nodes", len(ow), n)
			}

			cut := CutFromResource(v)
			checkWellFormed(t, cut, nodes)
			if !reflect.DeepEqual(cut, Grudge{v: {All: []string{GrudgeResource}}}) {
				t.Errorf("cut %s: %#v", v, cut)
			}
		}

		// Isolated: every node reaches only itself, so no side has a quorum.
		all := Isolated(nodes)
		checkWellFormed(t, all, nodes)
		checkSymmetric(t, all)
		if !slices.Equal(all.Nodes(), nodes) {
			t.Errorf("isolated %d: nodes with rules %v, want all of %v", n, all.Nodes(), nodes)
		}
		for _, v := range nodes {
			if r := reach(all, nodes, v); !slices.Equal(r, []string{v}) {
				t.Errorf("isolated %d: %s still reaches %v", n, v, r)
			}
		}
	}
}

// The random shapes for fixed seeds, written out: they pin the shuffle of
// math/rand/v2's PCG, so a recorded --seed keeps meaning the same partitions.
func TestRandomShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  Grudge
		want Grudge
	}{
		// Seed 7 shuffles n1..n3 to n2 n3 n1.
		{"halves 3", RandomHalves(nodeNames(3), testRNG(7)), Grudge{
			"n1": dropAll("n2"), "n2": dropAll("n1", "n3"), "n3": dropAll("n2"),
		}},
		{"bridge 3", Bridge(nodeNames(3), testRNG(7)), Grudge{
			"n1": dropAll("n3"), "n2": {}, "n3": dropAll("n1"),
		}},
		// n = 3 has no symmetric bare majority for everyone: the line n3-n2-n1.
		{"ring 3", MajoritiesRing(nodeNames(3), testRNG(7)), Grudge{
			"n1": dropAll("n3"), "n2": {}, "n3": dropAll("n1"),
		}},
		// Seed 7 shuffles n1..n5 to n3 n5 n4 n1 n2.
		{"halves 5", RandomHalves(nodeNames(5), testRNG(7)), Grudge{
			"n1": dropAll("n3", "n5"), "n2": dropAll("n3", "n5"), "n4": dropAll("n3", "n5"),
			"n3": dropAll("n1", "n2", "n4"), "n5": dropAll("n1", "n2", "n4"),
		}},
		{"bridge 5", Bridge(nodeNames(5), testRNG(7)), Grudge{
			"n3": {},
			"n1": dropAll("n4", "n5"), "n2": dropAll("n4", "n5"),
			"n4": dropAll("n1", "n2"), "n5": dropAll("n1", "n2"),
		}},
		// Ring n3 n5 n4 n1 n2: each node sees its two neighbours.
		{"ring 5", MajoritiesRing(nodeNames(5), testRNG(7)), Grudge{
			"n1": dropAll("n3", "n5"),
			"n2": dropAll("n4", "n5"),
			"n3": dropAll("n1", "n4"),
			"n4": dropAll("n2", "n3"),
			"n5": dropAll("n1", "n2"),
		}},
		// Seed 7 shuffles n1..n7 to n5 n4 n3 n6 n1 n7 n2.
		{"halves 7", RandomHalves(nodeNames(7), testRNG(7)), Grudge{
			"n3": dropAll("n1", "n2", "n6", "n7"), "n4": dropAll("n1", "n2", "n6", "n7"), "n5": dropAll("n1", "n2", "n6", "n7"),
			"n1": dropAll("n3", "n4", "n5"), "n2": dropAll("n3", "n4", "n5"),
			"n6": dropAll("n3", "n4", "n5"), "n7": dropAll("n3", "n4", "n5"),
		}},
		{"bridge 7", Bridge(nodeNames(7), testRNG(7)), Grudge{
			"n5": {},
			"n3": dropAll("n1", "n2", "n7"), "n4": dropAll("n1", "n2", "n7"), "n6": dropAll("n1", "n2", "n7"),
			"n1": dropAll("n3", "n4", "n6"), "n2": dropAll("n3", "n4", "n6"), "n7": dropAll("n3", "n4", "n6"),
		}},
		// Ring n5 n4 n3 n6 n1 n7 n2 (positions 0..6): ring neighbours plus
		// the chord pairs (0,3) (6,2) (5,1) and (4,0), so n5 sees one extra.
		{"ring 7", MajoritiesRing(nodeNames(7), testRNG(7)), Grudge{
			"n1": dropAll("n2", "n3", "n4"), // sees n5 n6 n7
			"n2": dropAll("n1", "n4", "n6"), // sees n3 n5 n7
			"n3": dropAll("n1", "n5", "n7"), // sees n2 n4 n6
			"n4": dropAll("n1", "n2", "n6"), // sees n3 n5 n7
			"n5": dropAll("n3", "n7"),       // sees n1 n2 n4 n6
			"n6": dropAll("n2", "n4", "n7"), // sees n1 n3 n5
			"n7": dropAll("n3", "n5", "n6"), // sees n1 n2 n4
		}},
		{"bridge 2", Bridge(nodeNames(2), testRNG(7)), Grudge{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !reflect.DeepEqual(tc.got, tc.want) {
				t.Errorf("got  %#v\nwant %#v", tc.got, tc.want)
			}
		})
	}
}

func TestRandomShapeProperties(t *testing.T) {
	for _, n := range []int{3, 5, 7} {
		nodes := nodeNames(n)
		for seed := range uint64(50) {
			t.Run(fmt.Sprintf("n=%d seed=%d", n, seed), func(t *testing.T) {
				halves := RandomHalves(nodes, testRNG(seed))
				checkWellFormed(t, halves, nodes)
				checkSymmetric(t, halves)
				checkHalves(t, halves, nodes)

				bridge := Bridge(nodes, testRNG(seed))
				checkWellFormed(t, bridge, nodes)
				checkSymmetric(t, bridge)
				checkBridge(t, bridge, nodes)

				ring := MajoritiesRing(nodes, testRNG(seed))
				checkWellFormed(t, ring, nodes)
				checkSymmetric(t, ring)
				checkRing(t, ring, nodes)
			})
		}
	}
}

// checkHalves checks that every node reaches exactly its half, and that the
// halves have floor(n/2) and ceil(n/2) nodes.
func checkHalves(t *testing.T, g Grudge, nodes []string) {
	t.Helper()
	var sizes []int
	seen := map[string]bool{}
	for _, a := range nodes {
		r := reach(g, nodes, a)
		for _, b := range r {
			if !slices.Equal(reach(g, nodes, b), r) {
				t.Errorf("%s reaches %v but %s reaches %v", a, r, b, reach(g, nodes, b))
			}
		}
		if !seen[a] {
			sizes = append(sizes, len(r))
			for _, b := range r {
				seen[b] = true
			}
		}
	}
	slices.Sort(sizes)
	if want := []int{len(nodes) / 2, len(nodes) - len(nodes)/2}; !slices.Equal(sizes, want) {
		t.Errorf("halves of sizes %v, want %v: %v", sizes, want, g)
	}
}

// checkBridge checks that one node drops nobody and is dropped by nobody,
// and that the others form two halves each dropping exactly the other.
func checkBridge(t *testing.T, g Grudge, nodes []string) {
	t.Helper()
	var bridges, rest []string
	for _, a := range nodes {
		if len(reach(g, nodes, a)) == len(nodes) {
			bridges = append(bridges, a)
		} else {
			rest = append(rest, a)
		}
	}
	if len(bridges) != 1 {
		t.Fatalf("bridge nodes %v, want one: %v", bridges, g)
	}
	h1 := slices.DeleteFunc(reach(g, nodes, rest[0]), func(b string) bool { return b == bridges[0] })
	h2 := slices.DeleteFunc(slices.Clone(rest), func(b string) bool { return slices.Contains(h1, b) })
	for _, a := range rest {
		want := h1
		if slices.Contains(h1, a) {
			want = h2
		}
		if !slices.Equal(g[a].All, want) {
			t.Errorf("%s drops %v, want the other half %v", a, g[a].All, want)
		}
	}
	sizes := []int{len(h1), len(h2)}
	slices.Sort(sizes)
	if m := len(rest); !slices.Equal(sizes, []int{m / 2, m - m/2}) {
		t.Errorf("halves %v and %v, want sizes %d and %d", h1, h2, m/2, m-m/2)
	}
}

// checkRing checks that every node sees a bare majority, itself included;
// when n%4 == 3 no symmetric grudge can do that for all nodes, and exactly one
// sees one node more. For n >= 5 no two nodes may see the same majority.
func checkRing(t *testing.T, g Grudge, nodes []string) {
	t.Helper()
	n := len(nodes)
	m := n/2 + 1
	extra := 0
	sets := map[string]string{}
	for _, a := range nodes {
		r := reach(g, nodes, a)
		switch len(r) {
		case m:
		case m + 1:
			extra++
		default:
			t.Errorf("%s sees %v, want %d nodes", a, r, m)
		}
		key := fmt.Sprint(r)
		if b, ok := sets[key]; ok && n >= 5 {
			t.Errorf("%s and %s both see %v", a, b, r)
		}
		sets[key] = a
	}
	wantExtra := 0
	if n%4 == 3 {
		wantExtra = 1
	}
	if extra != wantExtra {
		t.Errorf("%d nodes see one more than a bare majority, want %d: %v", extra, wantExtra, g)
	}
}

// The ring's layout depends on n alone (the seed only relabels it), so
// every size up to 16 shows the construction holds.
func TestMajoritiesRingSizes(t *testing.T) {
	for n := 1; n <= 16; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			nodes := nodeNames(n)
			g := MajoritiesRing(nodes, testRNG(uint64(n)))
			checkWellFormed(t, g, nodes)
			checkSymmetric(t, g)
			checkRing(t, g, nodes)
			if len(g) != n {
				t.Errorf("%d entries for %d nodes", len(g), n)
			}
		})
	}
	// n = 4: each node drops only the node opposite it on the ring.
	g := MajoritiesRing(nodeNames(4), testRNG(1))
	for a, d := range g {
		if len(d.All) != 1 {
			t.Errorf("n=4: %s drops %v, want one node", a, d.All)
		}
	}
	// n <= 2: a majority is everyone.
	for _, n := range []int{1, 2} {
		if ns := MajoritiesRing(nodeNames(n), testRNG(1)).Nodes(); ns != nil {
			t.Errorf("n=%d: %v drop something", n, ns)
		}
	}
}

func TestRandomShapesSeeded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape func([]string, *rand.Rand) Grudge
	}{
		{"halves", RandomHalves},
		{"bridge", Bridge},
		{"ring", MajoritiesRing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes := nodeNames(5)
			differ := false
			for seed := range uint64(20) {
				a, b := tc.shape(nodes, testRNG(seed)), tc.shape(nodes, testRNG(seed))
				if !reflect.DeepEqual(a, b) {
					t.Errorf("seed %d: %v then %v", seed, a, b)
				}
				if !reflect.DeepEqual(a, tc.shape(nodes, testRNG(seed+1))) {
					differ = true
				}
			}
			if !differ {
				t.Error("seeds 0..20 all give the same grudge")
			}
			// The input order does not matter, only the seed.
			rev := slices.Clone(nodes)
			slices.Reverse(rev)
			if a, b := tc.shape(nodes, testRNG(3)), tc.shape(rev, testRNG(3)); !reflect.DeepEqual(a, b) {
				t.Errorf("reversed input: %v, want %v", b, a)
			}
		})
	}
}

func TestNodes(t *testing.T) {
	for _, tc := range []struct {
		g    Grudge
		want []string
	}{
		{Grudge{}, nil},
		{Grudge{"n2": {}, "n1": {}}, nil},
		{IsolateNode(nodeNames(3), "n3"), []string{"n1", "n2", "n3"}},
		{Grudge{"n1": {}, "n3": dropAll("n2"), "n2": dropAll("n3")}, []string{"n2", "n3"}},
		{OneWay(nodeNames(3), "n2"), []string{"n1", "n3"}},
		{CutFromResource("n4"), []string{"n4"}},
	} {
		if got := tc.g.Nodes(); !slices.Equal(got, tc.want) {
			t.Errorf("%#v.Nodes() = %v, want %v", tc.g, got, tc.want)
		}
	}
}

func TestMerge(t *testing.T) {
	a := Grudge{"n1": dropAll("n3", "n2"), "n2": dropAll("n1")}
	b := Grudge{"n1": {All: []string{"n2", "resource"}, Initiated: []string{"n5"}}, "n4": {}}
	want := Grudge{
		"n1": {All: []string{"n2", "n3", "resource"}, Initiated: []string{"n5"}},
		"n2": dropAll("n1"),
		"n4": {},
	}
	if got := a.Merge(b); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %#v\nwant %#v", got, want)
	}
	if got := b.Merge(a); !reflect.DeepEqual(got, want) {
		t.Errorf("merge is not commutative: %#v", got)
	}
	// The inputs stay as they were.
	if !slices.Equal(a["n1"].All, []string{"n3", "n2"}) || len(b["n1"].All) != 2 {
		t.Errorf("merge changed its inputs: %v %v", a, b)
	}
	if got := (Grudge{}).Merge(nil); len(got) != 0 {
		t.Errorf("empty merge: %v", got)
	}
	// Merging a grudge with itself changes nothing.
	ring := MajoritiesRing(nodeNames(7), testRNG(1))
	if got := ring.Merge(ring); !reflect.DeepEqual(got, ring) {
		t.Errorf("ring merged with itself: %v", got)
	}
	if got := maps.Clone(ring).Merge(Grudge{}); !reflect.DeepEqual(got, ring) {
		t.Errorf("ring merged with nothing: %v", got)
	}
}

func TestGrudgeString(t *testing.T) {
	for _, tc := range []struct {
		g    Grudge
		want string
	}{
		{Grudge{}, "no partition"},
		{nil, "no partition"},
		{Components(nodeNames(3)), "no partition"},
		{IsolateNode(nodeNames(5), "n1"), "n1 | n2 n3 n4 n5"},
		{IsolateNode(nodeNames(5), "n3"), "n1 n2 n4 n5 | n3"},
		{Isolated(nodeNames(5)), "n1 | n2 | n3 | n4 | n5"},
		{Components([]string{"n1", "n4", "n7"}, []string{"n2", "n5"}, []string{"n3", "n6"}), "n1 n4 n7 | n2 n5 | n3 n6"},
		{RandomHalves(nodeNames(5), testRNG(7)), "n1 n2 n4 | n3 n5"},
		{Bridge(nodeNames(5), testRNG(7)), "n1 n2 | n4 n5 (bridged by n3)"},
		{MajoritiesRing(nodeNames(5), testRNG(7)), "n1 sees n2,n4; n2 sees n1,n3; n3 sees n2,n5; n4 sees n1,n5; n5 sees n3,n4"},
		{OneWay(nodeNames(3), "n1"), "n1 -/-> n2,n3 (n2,n3 -> n1 still works)"},
		{CutFromResource("n3"), "n3 cut from the resource"},
		{CutFromResource("n3").Merge(CutFromResource("n1")), "n1,n3 cut from the resource"},
		{IsolateNode(nodeNames(3), "n1").Merge(CutFromResource("n2")), "n1 | n2 n3; n2 cut from the resource"},
		// A drop one way already cuts the link both ways.
		{Grudge{"n1": dropAll("n2"), "n2": {}, "n3": {}}, "n1 | n2 (bridged by n3)"},
		{Grudge{"n1": dropAll("n2")}, "n1 | n2"},
	} {
		if got := tc.g.String(); got != tc.want {
			t.Errorf("%#v:\n got  %q\n want %q", tc.g, got, tc.want)
		}
	}
}
