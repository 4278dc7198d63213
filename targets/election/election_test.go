package election

import (
	"slices"
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	m, err := NewMembers("n2", []string{"n10", "n1", "n9"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Members{"n1", "n2", "n9", "n10"}); !slices.Equal(m, want) {
		t.Fatalf("order %v, want %v", m, want)
	}
	if m.Rank("n10") != 3 || m.Rank("n3") != -1 {
		t.Errorf("ranks %d %d", m.Rank("n10"), m.Rank("n3"))
	}
	if got := m.Above("n2"); !slices.Equal(got, []string{"n9", "n10"}) {
		t.Errorf("above n2: %v", got)
	}
	if m.After("n9") != "n10" || m.After("n10") != "n1" {
		t.Errorf("ring: after n9 %s, after n10 %s", m.After("n9"), m.After("n10"))
	}
	for _, tc := range []struct {
		self  string
		peers []string
		want  string
	}{
		{"", nil, "empty ID"},
		{"a", []string{""}, "empty peer"},
		{"a", []string{"b", "a"}, "among Peers"},
		{"a", []string{"b", "b"}, "duplicate peer"},
	} {
		if _, err := NewMembers(tc.self, tc.peers); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q: %v, want %q", tc.self, tc.peers, err, tc.want)
		}
	}
}

// Epochs are unique to their member and grow past whatever was seen.
func TestNextEpoch(t *testing.T) {
	m, _ := NewMembers("a", []string{"b", "c"})
	owner := map[uint64]string{}
	for _, id := range m {
		for seen := range uint64(30) {
			e := m.NextEpoch(id, seen)
			if e <= seen || e > seen+uint64(len(m)) {
				t.Fatalf("%s after %d: %d", id, seen, e)
			}
			if o, ok := owner[e]; ok && o != id {
				t.Fatalf("epoch %d claimed by %s and %s", e, o, id)
			}
			owner[e] = id
		}
	}
	if m.NextEpoch("a", 0) != 3 || m.NextEpoch("b", 0) != 1 || m.NextEpoch("c", 5) != 8 {
		t.Errorf("got %d %d %d", m.NextEpoch("a", 0), m.NextEpoch("b", 0), m.NextEpoch("c", 5))
	}
}
