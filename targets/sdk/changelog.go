package sdk

import (
	"fmt"
	"log"
	"sync"
)

// ChangeLog logs a line only when what it says has changed: an agent
// asked for its belief twenty times a second, or an elector failing every
// attempt the same way while its server is away, says each change once.
// The zero value is ready; it is safe for concurrent use.
type ChangeLog struct {
	mu   sync.Mutex
	last string
}

// Printf logs the line unless key is the key of the line logged last; the
// line may say more than its key (a term that moves while the state
// stays).
func (c *ChangeLog) Printf(key, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if key == c.last {
		return
	}
	c.last = key
	log.Print(fmt.Sprintf(format, args...))
}

// Reset forgets the last line: the next is logged whatever it says (a
// failure after a success).
func (c *ChangeLog) Reset() {
	c.mu.Lock()
	c.last = ""
	c.mu.Unlock()
}
