package diskfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Mount mounts the layer over dir, whose files it keeps where they are:
// it opens dir before it mounts over it and reaches the files under the
// mount through that descriptor (the kernel's /proc/self/fd link), so
// the program's files are the image's and a restarted container's, with
// nothing copied. It needs CAP_SYS_ADMIN and /dev/fuse.
func (l *Layer) Mount(dir string) (*fuse.Server, error) {
	// A descriptor of the process's, never closed: an *os.File's would
	// be closed by its finalizer once collected, and the number given
	// to another file, under the mount's every path.
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	under := "/proc/self/fd/" + strconv.Itoa(fd)
	var st syscall.Stat_t
	if err := syscall.Stat(under, &st); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	root := &fs.LoopbackRoot{Path: under, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, l: l, mount: filepath.Clean(dir)}
	}
	root.RootNode = root.NewNode(root, nil, "", &st)
	server, err := fs.Mount(dir, root.RootNode, &fs.Options{
		// The directory's own inode number, not 0, which tools that
		// walk a tree by inode (rm -r's fts) take for none.
		RootStableAttr: &fs.StableAttr{Ino: st.Ino, Gen: 1},
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true, // as root in the container: no fusermount there
			AllowOther:        true, // the program may run as another user
			FsName:            "splitbrain-diskfs",
			Name:              "splitbrain",
		}})
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("mount FUSE on %s: %w", dir, err)
	}
	return server, nil
}

// node is a file or directory under the mount: the loopback's, with
// every change gated by the fault in force and, for files, recorded for
// undo.
type node struct {
	fs.LoopbackNode
	l     *Layer
	mount string // the data directory the mount is over
}

var (
	_ fs.NodeOpener    = (*node)(nil)
	_ fs.NodeCreater   = (*node)(nil)
	_ fs.NodeSetattrer = (*node)(nil)
	_ fs.NodeUnlinker  = (*node)(nil)
	_ fs.NodeRenamer   = (*node)(nil)
	_ fs.NodeMkdirer   = (*node)(nil)
	_ fs.NodeRmdirer   = (*node)(nil)
	_ fs.NodeSymlinker = (*node)(nil)
	_ fs.NodeLinker    = (*node)(nil)
	_ fs.NodeMknoder   = (*node)(nil)
)

// under is the path of child name (or of n itself, for "") under the
// mount, where the layer reaches it.
func (n *node) under(name string) string {
	return filepath.Join(n.RootData.Path, n.Path(n.Root()), name)
}

// seen is the path of child name (or of n itself, for "") as the
// program sees it, which names its records in the undo log.
func (n *node) seen(name string) string {
	return filepath.Join(n.mount, n.Path(n.Root()), name)
}

// readable opens a file for reading too when writes are recorded, which
// must read what a write overwrites.
func (n *node) readable(flags uint32) uint32 {
	if n.l.undo != nil && flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		flags = flags&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return flags
}

// wrap is the loopback's handle of n's file as the layer's.
func (n *node) wrap(fh fs.FileHandle, flags uint32) *file {
	lf := fh.(*fs.LoopbackFile) // the loopback's every handle of a file
	fd, _ := lf.PassthroughFd()
	return &file{LoopbackFile: lf, fd: fd, n: n, synced: flags&(syscall.O_SYNC|syscall.O_DSYNC) != 0}
}

// Open opens the file; one opened O_TRUNC is a change, gated, and with
// the undo log cut after its old bytes are recorded.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	trunc := flags&syscall.O_TRUNC != 0
	if trunc {
		if errno := n.l.enter(); errno != 0 {
			return nil, 0, errno
		}
		if n.l.undo != nil {
			flags &^= syscall.O_TRUNC
		}
	}
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, n.readable(flags))
	if errno != 0 {
		return nil, 0, errno
	}
	f := n.wrap(fh, flags)
	if trunc && n.l.undo != nil {
		errno := n.beforeTruncate(f, 0)
		if errno == 0 {
			errno = fs.ToErrno(syscall.Ftruncate(f.fd, 0))
		}
		if errno != 0 {
			f.Release(ctx)
			return nil, 0, errno
		}
	}
	return f, fuseFlags, 0
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.l.enter(); errno != 0 {
		return nil, nil, 0, errno
	}
	ch, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, n.readable(flags), mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return ch, ch.Operations().(*node).wrap(fh, flags), fuseFlags, 0
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		if errno := n.l.enter(); errno != 0 {
			return errno
		}
		if errno := n.beforeTruncate(f, int64(size)); errno != 0 {
			return errno
		}
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// beforeTruncate records what a truncation to size cuts off or extends.
func (n *node) beforeTruncate(f fs.FileHandle, size int64) syscall.Errno {
	if n.l.undo == nil {
		return 0
	}
	if fh, ok := f.(*file); ok {
		return fs.ToErrno(n.l.undo.Before(fh.fd, n.seen(""), size, 1<<62))
	}
	fd, err := syscall.Open(n.under(""), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fs.ToErrno(err)
	}
	defer syscall.Close(fd)
	return fs.ToErrno(n.l.undo.Before(fd, n.seen(""), size, 1<<62))
}

// Unlink removes a file, and its records: a new file of its name must not
// inherit them. (A file with another name, a hard link, loses them too:
// its unsynced writes are kept.)
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	if errno := n.l.enter(); errno != 0 {
		return errno
	}
	if errno := n.LoopbackNode.Unlink(ctx, name); errno != 0 {
		return errno
	}
	if n.l.undo != nil {
		return fs.ToErrno(n.l.undo.Forget(n.seen(name)))
	}
	return 0
}

// Rename moves a file's records with it, those of the file it replaces
// dropped.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if errno := n.l.enter(); errno != 0 {
		return errno
	}
	p, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 || n.l.undo == nil {
		return errno
	}
	from, to := n.seen(name), p.seen(newName)
	if flags&unix.RENAME_EXCHANGE != 0 { // the two swap names, and records
		swap := to + ".exchanged"
		return fs.ToErrno(errors.Join(n.l.undo.Move(to, swap), n.l.undo.Move(from, to), n.l.undo.Move(swap, from)))
	}
	if err := n.l.undo.Forget(to); err != nil {
		return fs.ToErrno(err)
	}
	return fs.ToErrno(n.l.undo.Move(from, to))
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.l.enter(); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	if errno := n.l.enter(); errno != 0 {
		return errno
	}
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.l.enter(); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Symlink(ctx, target, name, out)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.l.enter(); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Link(ctx, target, name, out)
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if errno := n.l.enter(); errno != 0 {
		return nil, errno
	}
	return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
}

// file is an open file under the mount, fd the layer's own descriptor
// of it. synced: opened O_SYNC or O_DSYNC, whose writes are durable when
// they return.
type file struct {
	*fs.LoopbackFile
	fd     int
	n      *node
	synced bool
}

// PassthroughFd refuses the kernel's FUSE passthrough (Linux 6.9 and
// later), which would let reads and writes go straight to the file and
// past the layer.
func (f *file) PassthroughFd() (int, bool) { return 0, false }

var (
	_ fs.FileWriter    = (*file)(nil)
	_ fs.FileFsyncer   = (*file)(nil)
	_ fs.FileAllocater = (*file)(nil)
)

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if errno := f.n.l.enter(); errno != 0 {
		return 0, errno
	}
	f.n.l.stats.writes.Add(1)
	if f.n.l.undo != nil && !f.synced {
		if err := f.n.l.undo.Before(f.fd, f.n.seen(""), off, int64(len(data))); err != nil {
			return 0, fs.ToErrno(err)
		}
	}
	return f.LoopbackFile.Write(ctx, data, off)
}

func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if errno := f.n.l.enter(); errno != 0 {
		return errno
	}
	f.n.l.stats.syncs.Add(1)
	if errno := f.LoopbackFile.Fsync(ctx, flags); errno != 0 {
		return errno
	}
	if f.n.l.undo != nil {
		return fs.ToErrno(f.n.l.undo.Forget(f.n.seen("")))
	}
	return 0
}

func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if errno := f.n.l.enter(); errno != 0 {
		return errno
	}
	return f.LoopbackFile.Allocate(ctx, off, size, mode)
}
