package shrink

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sync"
)

// Journal keeps every finished replay's outcome in a file, a line each,
// so that a shrink killed half-way and started again takes what it had
// already learnt instead of replaying it: the search is the same given
// the same outcomes, so it walks the same path up to where it stopped.
type Journal struct {
	mu    sync.Mutex
	f     *os.File // nil: kept in memory only
	known map[string]map[int]Outcome
}

// entry is a line of the journal.
type entry struct {
	Key     string  `json:"key"`
	Run     int     `json:"run"`
	Outcome Outcome `json:"outcome"`
}

// OpenJournal reads the journal at path, if any, and appends to it; ""
// keeps it in memory. A last line cut short by a kill is dropped.
func OpenJournal(path string) (*Journal, error) {
	j := &Journal{known: map[string]map[int]Outcome{}}
	if path == "" {
		return j, nil
	}
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	whole := b[:bytes.LastIndexByte(b, '\n')+1]
	for n, line := range bytes.Split(bytes.TrimSuffix(whole, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("%s: line %d: %v", path, n+1, err)
		}
		j.remember(e)
	}
	if len(whole) < len(b) {
		if err := os.Truncate(path, int64(len(whole))); err != nil {
			return nil, err
		}
	}
	if j.f, err = os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
		return nil, err
	}
	return j, nil
}

func (j *Journal) remember(e entry) {
	if j.known[e.Key] == nil {
		j.known[e.Key] = map[int]Outcome{}
	}
	j.known[e.Key][e.Run] = e.Outcome
}

// Known are the outcomes of the candidate key's replays so far, by index.
func (j *Journal) Known(key string) map[int]Outcome {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := map[int]Outcome{}
	for i, o := range j.known[key] {
		out[i] = o
	}
	return out
}

// Add keeps the outcome of replay i of candidate key.
func (j *Journal) Add(key string, i int, o Outcome) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	e := entry{Key: key, Run: i, Outcome: o}
	j.remember(e)
	if j.f == nil {
		return nil
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = j.f.Write(append(b, '\n'))
	return err
}

// Close closes the journal's file.
func (j *Journal) Close() error {
	if j.f == nil {
		return nil
	}
	return j.f.Close()
}
