package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Recorder appends events to a file as they happen. Each event is written
// and flushed to the kernel before Record returns, so a killed controller
// leaves every event it recorded behind. Safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	f     *os.File
	start time.Time
	next  int64
	enc   *json.Encoder
}

// NewRecorder creates (or truncates) path and times events from start.
func NewRecorder(path string, start time.Time) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Recorder{f: f, start: start, enc: json.NewEncoder(f)}, nil
}

// Now is the run's clock: nanoseconds since the run started (monotonic).
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Record stamps e with the next index and, if e.Time is zero, the current
// time, writes it, and returns it as written.
func (r *Recorder) Record(e Event) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Time == 0 {
		e.Time = r.Now()
	}
	e.Index = r.next
	r.next++
	if r.enc != nil {
		// One write(2) per event: the encoder writes the whole line at once.
		if err := r.enc.Encode(e); err != nil {
			r.enc = nil // the disk is gone; stop trying, Close reports it
		}
	}
	return e
}

// Count is the number of events recorded so far.
func (r *Recorder) Count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}

// Close syncs and closes the file.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	serr := r.f.Sync()
	cerr := r.f.Close()
	r.f = nil
	r.enc = nil
	if serr != nil {
		return serr
	}
	return cerr
}

// ReadEvents reads a history.jsonl stream. A malformed line (a truncated last
// line from a killed run, say) is an error that names the line.
func ReadEvents(r io.Reader) ([]Event, error) {
	return readLines[Event](r)
}

// ReadDecisions reads a resource.jsonl stream.
func ReadDecisions(r io.Reader) ([]Decision, error) {
	return readLines[Decision](r)
}

// ReadFile opens path and reads it with read.
func ReadFile[T any](path string, read func(io.Reader) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

func readLines[T any](r io.Reader) ([]T, error) {
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(b, &v); err != nil {
			return out, fmt.Errorf("line %d: %v", line, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("line %d: %v", line+1, err)
	}
	return out, nil
}
