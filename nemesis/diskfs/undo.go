package diskfs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// An Undo log keeps, for every file under the data directories, what each
// write since the file's last fsync overwrote: the bytes it covered and
// the file's size before it. A kill keeps the written bytes, as a
// crashed process leaves them in the kernel's page cache; a power cut
// loses them, which Rollback plays back by restoring, newest first, what
// every unsynced write overwrote. An fsync makes a file's writes durable
// and forgets their records.
//
// The log lives outside the data directories, on the container's own
// filesystem, which outlives a kill of the container, and is not itself
// synced: it stands for what the kernel kept in memory, and a power cut
// of the host, which would lose it, is not what the fault plays.
//
// Only file contents are undone. Files made, renamed or removed stay so,
// as if every directory were synced at once (a journaling filesystem's
// metadata usually is, by its next commit).
type Undo struct {
	dir string
	mu  sync.Mutex
}

// NewUndo keeps its records in dir, made if missing.
func NewUndo(dir string) (*Undo, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &Undo{dir: dir}, nil
}

// A record is one write's undo: at Off, the Old bytes it overwrote
// (those the file had there), and the file's Size before it.
type record struct {
	Off, Size int64
	Old       []byte
}

// recordHeader is a record's offset, size and length of its old bytes.
const recordHeader = 8 + 8 + 4

// The log is a file per file written, named by the file's path as the
// program sees it (under a data directory), escaped: an inode number
// would do, were it kept by a container's restart, which on some
// storage drivers (fuse-overlayfs) gives files new ones. A rename moves
// the records with the file.
func (u *Undo) log(path string) string { return filepath.Join(u.dir, url.PathEscape(path)) }

// Before records what a write of n bytes at off to the file at path,
// open as fd, is about to overwrite; it must be called before the write,
// and the write must not begin until it returns. A truncation to size s
// is the write of the bytes from s to the end (n = size - s, or more),
// with the file's size restored on rollback.
func (u *Undo) Before(fd int, path string, off, n int64) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	r := record{Off: off, Size: st.Size}
	if end := min(off+n, st.Size); end > off {
		r.Old = make([]byte, end-off)
		if _, err := syscall.Pread(fd, r.Old, off); err != nil {
			return err
		}
	}
	buf := make([]byte, recordHeader, recordHeader+len(r.Old))
	binary.LittleEndian.PutUint64(buf[0:], uint64(r.Off))
	binary.LittleEndian.PutUint64(buf[8:], uint64(r.Size))
	binary.LittleEndian.PutUint32(buf[16:], uint32(len(r.Old)))
	buf = append(buf, r.Old...)
	u.mu.Lock()
	defer u.mu.Unlock()
	f, err := os.OpenFile(u.log(path), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(buf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Forget drops the records of the file at path: it was synced, or is
// gone (a new file of its name must not inherit them).
func (u *Undo) Forget(path string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	err := os.Remove(u.log(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Move moves the records of the file at from, or of every file under the
// directory from, to the same names under to: a rename.
func (u *Undo) Move(from, to string) error {
	return u.each(func(log string) error {
		p, err := url.PathUnescape(filepath.Base(log))
		if err != nil {
			return nil
		}
		if rest, under := strings.CutPrefix(p, from+"/"); under {
			return os.Rename(log, u.log(to+"/"+rest))
		}
		if p == from {
			return os.Rename(log, u.log(to))
		}
		return nil
	})
}

// Pending is how many files have records, and the log's size.
func (u *Undo) Pending() (files int, bytes int64) {
	u.each(func(log string) error {
		if info, err := os.Stat(log); err == nil {
			files, bytes = files+1, bytes+info.Size()
		}
		return nil
	})
	return files, bytes
}

// Discard forgets every record: the kill kept what was written.
func (u *Undo) Discard() error { return u.each(os.Remove) }

// each calls f with the path of every file's log, under the log's lock,
// and stops at its first error.
func (u *Undo) each(f func(log string) error) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	entries, err := os.ReadDir(u.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := f(filepath.Join(u.dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// Rollback undoes every unsynced write the log holds, on the files at
// their paths (the data directories not mounted over yet), and forgets
// the records: what a power cut leaves. It returns how many files it
// rolled back.
func (u *Undo) Rollback() (int, error) {
	entries, err := os.ReadDir(u.dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range entries {
		path, err := url.PathUnescape(e.Name())
		if err != nil {
			continue
		}
		err = u.rollbackFile(filepath.Join(u.dir, e.Name()), path)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.EISDIR): // removed or replaced since: not ours to bring back
		case err != nil:
			return n, fmt.Errorf("roll back %s: %w", path, err)
		default:
			n++
		}
	}
	return n, u.Discard()
}

// rollbackFile plays the records in log back onto the file at path,
// newest first.
func (u *Undo) rollbackFile(log, path string) error {
	records, err := readRecords(log)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	for i := len(records) - 1; i >= 0; i-- {
		r := records[i]
		if len(r.Old) > 0 {
			if _, err := f.WriteAt(r.Old, r.Off); err != nil {
				f.Close()
				return err
			}
		}
		if err := f.Truncate(r.Size); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readRecords reads a file's log; a record cut short (the container
// killed while it was appended) ends it, and its write never began.
func readRecords(log string) ([]record, error) {
	b, err := os.ReadFile(log)
	if err != nil {
		return nil, err
	}
	var out []record
	for len(b) >= recordHeader {
		r := record{Off: int64(binary.LittleEndian.Uint64(b[0:])), Size: int64(binary.LittleEndian.Uint64(b[8:]))}
		n := int(binary.LittleEndian.Uint32(b[16:]))
		if len(b) < recordHeader+n {
			break
		}
		r.Old = b[recordHeader : recordHeader+n]
		out = append(out, r)
		b = b[recordHeader+n:]
	}
	return out, nil
}
