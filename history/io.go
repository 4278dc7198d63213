package history

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Recorder appends events to a file as they happen. Record stamps an
// event and hands it to a writer of the file's own, which writes each
// line in one write(2) at once: a disk that stalls a write (a loaded
// machine's dirty pages being flushed took 245 ms for a line) then
// delays the file, not the workload, the observer and the nemesis that
// record, nor the times they stamp. A killed controller leaves every
// event the writer reached. Safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	f       *os.File
	start   time.Time
	next    int64
	pending [][]byte      // lines recorded and not yet written
	wake    chan struct{} // holds a token while pending has lines; closed by Close
	closed  bool
	written chan struct{} // closed once the writer is done
	shut    func() error  // Close's work, done once for every call
	err     error         // the first write that failed
	failed  chan struct{} // closed then
}

// NewRecorder creates (or truncates) path and times events from start.
func NewRecorder(path string, start time.Time) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	r := &Recorder{f: f, start: start, wake: make(chan struct{}, 1), written: make(chan struct{}), failed: make(chan struct{})}
	r.shut = sync.OnceValue(r.shutDown)
	go r.write()
	return r, nil
}

// Now is the run's clock: nanoseconds since the run started (monotonic).
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Record stamps e with the next index and, if e.Time is zero, the current
// time, queues it for the file, and returns it as it will be written.
func (r *Recorder) Record(e Event) Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Time == 0 {
		e.Time = r.Now()
	}
	e.Index = r.next
	r.next++
	if r.err != nil || r.closed {
		return e
	}
	line, err := json.Marshal(e)
	if err != nil {
		r.fail(err)
		return e
	}
	r.pending = append(r.pending, append(line, '\n'))
	select {
	case r.wake <- struct{}{}:
	default: // a token already waits
	}
	return e
}

// write writes the pending lines, each in one write(2), until Close.
func (r *Recorder) write() {
	defer close(r.written)
	var lines [][]byte
	for {
		_, open := <-r.wake
		r.mu.Lock()
		lines, r.pending = r.pending, lines[:0]
		r.mu.Unlock()
		for _, line := range lines {
			if _, err := r.f.Write(line); err != nil {
				// The disk is full or gone. Stop writing, so that the
				// lines before stay whole; Err and Close report it.
				r.mu.Lock()
				r.fail(err)
				r.mu.Unlock()
				return
			}
		}
		clear(lines)
		if !open {
			return
		}
	}
}

// fail notes the first write that failed and drops what is pending.
// Callers hold mu.
func (r *Recorder) fail(err error) {
	if r.err == nil {
		r.err, r.pending = err, nil
		close(r.failed)
	}
}

// Failed is closed once a write failed; Err says why.
func (r *Recorder) Failed() <-chan struct{} { return r.failed }

// Err is the first write that failed, nil if none did.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Count is the number of events recorded so far.
func (r *Recorder) Count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}

// Close writes what is pending, syncs and closes the file. It reports
// the first write that failed, if one did. Events recorded after it are
// stamped and not written. Every call returns once the file is closed.
func (r *Recorder) Close() error { return r.shut() }

// shutDown is Close's work: it stops the writer, waits for it, then
// syncs and closes the file.
func (r *Recorder) shutDown() error {
	r.mu.Lock()
	r.closed = true
	close(r.wake)
	r.mu.Unlock()
	<-r.written
	serr := r.f.Sync()
	cerr := r.f.Close()
	return cmp.Or(r.Err(), serr, cerr)
}

// LineError is a line of a JSON-lines file that could not be read.
type LineError struct {
	Line int // from 1
	// Truncated says the line is the last one and has no newline: the
	// writer was most likely killed in the middle of it.
	Truncated bool
	Bytes     int // the line's length
	Err       error
}

func (e *LineError) Error() string {
	if e.Truncated {
		return fmt.Sprintf("line %d is cut short (the writer was probably killed while writing it): %v", e.Line, e.Err)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// ReadEvents reads a history.jsonl stream. A line that is not JSON, or not
// an event of a known type, is a *LineError that names it.
func ReadEvents(r io.Reader) ([]Event, error) {
	return readLines(r, checkEvent)
}

// ReadDecisions reads a resource.jsonl stream.
func ReadDecisions(r io.Reader) ([]Decision, error) {
	return readLines(r, func(*Decision) error { return nil })
}

func checkEvent(e *Event) error {
	switch e.Type {
	case Invoke, OK, Fail, Info:
		if e.Process == 0 {
			return fmt.Errorf("a %s event without a process", e.Type)
		}
	case Leader:
		if e.Node == "" {
			return errors.New("a leader observation without a node")
		}
	case Nemesis:
		if e.Phase != Inject && e.Phase != Heal {
			return fmt.Errorf("a nemesis event with phase %q, not inject or heal", e.Phase)
		}
	default:
		return fmt.Errorf("unknown event type %q", e.Type)
	}
	return nil
}

// ReadFile opens path and reads it with read. On a bad line it returns
// the lines before it with the error.
func ReadFile[T any](path string, read func(io.Reader) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out, err := read(f)
	if err != nil {
		return out, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// CutShort is the last line of a JSON-lines file that its writer did not
// finish (it was killed in the middle of the line).
type CutShort struct {
	File  string `json:"file"`
	Line  int    `json:"line"`  // from 1
	Bytes int    `json:"bytes"` // what was written of it
}

// ReadComplete reads path as ReadFile does, but leaves out a last line
// cut short, which it returns: the complete lines before it are what the
// writer recorded. Any other bad line is still an error: a file damaged
// in the middle was not just cut off.
func ReadComplete[T any](path string, read func(io.Reader) ([]T, error)) ([]T, *CutShort, error) {
	out, err := ReadFile(path, read)
	var le *LineError
	if errors.As(err, &le) && le.Truncated {
		return out, &CutShort{File: filepath.Base(path), Line: le.Line, Bytes: le.Bytes}, nil
	}
	return out, nil, err
}

// readLines decodes one T per line, skipping blank lines, and checks each.
func readLines[T any](r io.Reader, check func(*T) error) ([]T, error) {
	var out []T
	br := bufio.NewReaderSize(r, 64*1024)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return out, &LineError{Line: line, Err: err}
		}
		last := err == io.EOF
		if trimmed := bytes.TrimSpace(b); len(trimmed) > 0 {
			var v T
			if jerr := json.Unmarshal(trimmed, &v); jerr != nil {
				return out, &LineError{Line: line, Truncated: last, Bytes: len(b), Err: jerr}
			}
			if cerr := check(&v); cerr != nil {
				return out, &LineError{Line: line, Err: cerr}
			}
			out = append(out, v)
		}
		if last {
			return out, nil
		}
	}
}
