package sdk

import (
	"encoding/json"
	"os"
	"sync"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

// Clock is a node's wall clock. Targets must read wall time through it so
// that clock faults reach them; Go's runtime ignores libfaketime.
type Clock struct {
	path string

	mu      sync.Mutex
	skew    contract.Skew
	checked time.Time
	file    os.FileInfo // what skew was read from
}

// clockRecheck bounds how stale a clock reading can be after the harness
// changed the file, and how often Now costs a stat.
const clockRecheck = 10 * time.Millisecond

// NewClock returns a clock that honours the file at path ("" for none).
func NewClock(path string) *Clock { return &Clock{path: path} }

// Now is the node's wall time.
func (c *Clock) Now() time.Time {
	now := time.Now()
	if c == nil || c.path == "" {
		return now
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.Sub(c.checked) >= clockRecheck {
		c.checked = now
		c.reload()
	}
	return c.skew.Apply(now)
}

// reload rereads the file when it changed; a missing or unreadable file
// leaves the skew as it was (none before the first). The harness never
// removes the file (a heal writes a zero skew), but over several engines
// it replaces it by a link, whose old name is gone for a moment.
func (c *Clock) reload() {
	fi, err := os.Stat(c.path)
	if err != nil {
		return
	}
	// The harness replaces the file by a rename, so a new inode means new
	// content even when two changes fall within one mtime tick.
	if c.file != nil && os.SameFile(c.file, fi) && fi.ModTime().Equal(c.file.ModTime()) {
		return
	}
	b, err := os.ReadFile(c.path)
	var s contract.Skew
	if err == nil && json.Unmarshal(b, &s) == nil {
		c.skew, c.file = s, fi
	}
}
