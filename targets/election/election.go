// Package election holds what the bully and ring state machines share: the rank of a cluster's members, fencing epochs dealt out by rank, and the store of a node's last epoch.
package election

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Compare orders node IDs naturally: a shorter ID first, then bytewise, so
// that n9 ranks below n10 (the harness names nodes n1..nN).
func Compare(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
}

// Members is a cluster's node IDs in rank order, lowest first.
type Members []string

// NewMembers returns the cluster of self and its peers (the other nodes) in
// rank order, or what is wrong with them.
func NewMembers(self string, peers []string) (Members, error) {
	if self == "" {
		return nil, errors.New("empty ID")
	}
	m := append(Members{self}, peers...)
	slices.SortFunc(m, Compare)
	for i, id := range m {
		switch {
		case id == "":
			return nil, errors.New("empty peer ID")
		case i > 0 && id == m[i-1] && id == self:
			return nil, fmt.Errorf("ID %q is among Peers (Peers lists the other nodes)", id)
		case i > 0 && id == m[i-1]:
			return nil, fmt.Errorf("duplicate peer %q", id)
		}
	}
	return m, nil
}

// Rank is id's position in m, lowest 0, or -1 if id is not a member.
func (m Members) Rank(id string) int {
	i, ok := slices.BinarySearchFunc(m, id, Compare)
	if !ok {
		return -1
	}
	return i
}

// Above lists the members that outrank id.
func (m Members) Above(id string) []string { return m[m.Rank(id)+1:] }

// After is the member that follows id on the ring of m in rank order.
func (m Members) After(id string) string { return m[(m.Rank(id)+1)%len(m)] }

// NextEpoch is the smallest epoch above seen that belongs to id. Epochs are
// dealt out by rank (the member of rank r owns the epochs e with
// e mod len(m) == r), so two members never claim the same epoch even when
// they cannot talk to each other, and a member's next epoch is above every
// epoch it has seen. Epoch 0 belongs to nobody.
func (m Members) NextEpoch(id string, seen uint64) uint64 {
	n, r := uint64(len(m)), uint64(m.Rank(id))
	e := seen + 1
	return e + (r+n-e%n)%n
}

// Store keeps the last epoch a node claimed across its restarts; Save must
// be durable before it returns. sdk.FileStore[uint64] is one.
type Store interface {
	Load() (uint64, error)
	Save(uint64) error
}

// MemoryStore is a Store in memory, for tests. The zero value is ready and
// it is safe for concurrent use.
type MemoryStore struct {
	mu    sync.Mutex
	epoch uint64
}

// Load returns the last saved epoch.
func (s *MemoryStore) Load() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch, nil
}

// Save replaces the epoch.
func (s *MemoryStore) Save(e uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch = e
	return nil
}
