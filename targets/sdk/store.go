package sdk

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
)

// FileStore keeps one value as JSON in a file that survives a kill of the
// node. Save replaces the file atomically and syncs it before it returns,
// so whatever a node promised after a Save (a vote, an epoch) is still
// known when it restarts. A missing file loads as the zero value: the
// node's first start; so does an empty one, all that a power cut leaves
// of a file made but never synced (only Unsynced's can be).
type FileStore[T any] struct {
	Path string
	// Unsynced skips every fsync: Save returns before the value is
	// durable, which a kill keeps (the kernel has it) and a power cut
	// loses. A flaw, for the targets that show what that costs.
	Unsynced bool
}

// Load returns the last saved value.
func (s *FileStore[T]) Load() (T, error) {
	var v T
	b, err := os.ReadFile(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return v, nil
	}
	if err != nil || len(b) == 0 {
		return v, err
	}
	return v, json.Unmarshal(b, &v)
}

// Save replaces the stored value durably.
func (s *FileStore[T]) Save(v T) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := s.Path + ".tmp"
	if err := WriteFile(tmp, b, !s.Unsynced); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.Path); err != nil || s.Unsynced {
		return err
	}
	// The rename is durable only once the directory is.
	return syncDir(dir)
}

// WriteFile makes the file at path hold b, synced before it returns when
// sync is set: durable then, as a kill or a power cut finds it.
func WriteFile(path string, b []byte, sync bool) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
