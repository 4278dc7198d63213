package history

import (
	"bytes"
	"errors"
	"io"
	"os"
)

// Tail reads a file while it is written: each Next returns the complete
// lines added since the last, and leaves a line still being written for
// the next call. Watching a run's history costs what was added, not the
// whole file again.
type Tail[T any] struct {
	path string
	read func(io.Reader) ([]T, error)
	off  int64
}

// NewTail tails path, reading lines with read (ReadEvents, ReadDecisions).
func NewTail[T any](path string, read func(io.Reader) ([]T, error)) *Tail[T] {
	return &Tail[T]{path: path, read: read}
}

// Next returns the complete lines written since the last call; none while
// the file does not exist yet.
func (t *Tail[T]) Next() ([]T, error) {
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	end := bytes.LastIndexByte(b, '\n') + 1
	if end == 0 {
		return nil, nil
	}
	out, err := t.read(bytes.NewReader(b[:end]))
	if err != nil {
		return nil, err
	}
	t.off += int64(end)
	return out, nil
}
