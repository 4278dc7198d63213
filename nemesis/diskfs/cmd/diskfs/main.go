// Command diskfs mounts the disk-fault layer (nemesis/diskfs) over a
// node's data directories, runs the node's own program under it as its
// child, passes every signal on to it, and exits as it does. A run that
// may fault disks makes it the entry point of each node's container.
//
//	diskfs [-lose-unsynced] [-user U] -data DIR [-data DIR...] -- PROGRAM [ARG...]
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"github.com/splitbrain/splitbrain/nemesis/diskfs"
)

type dirs []string

func (d *dirs) String() string     { return strings.Join(*d, ",") }
func (d *dirs) Set(s string) error { *d = append(*d, s); return nil }

func main() {
	log.SetFlags(0)
	log.SetPrefix("diskfs: ")
	var data dirs
	flag.Var(&data, "data", "a data directory to mount the layer over (repeat for more)")
	lose := flag.Bool("lose-unsynced", false, "record unsynced writes, which a power cut loses")
	user := flag.String("user", "", "run the program as this user (uid[:gid] or a name in /etc/passwd)")
	flag.Parse()
	if len(data) == 0 || flag.NArg() == 0 {
		log.Print("usage: diskfs [-lose-unsynced] [-user U] -data DIR... -- PROGRAM [ARG...]")
		os.Exit(2)
	}
	for _, d := range data {
		if info, err := os.Stat(d); err != nil || !info.IsDir() {
			refuse("data directory %s does not exist in the image", d)
		}
	}
	var undo *diskfs.Undo
	if *lose {
		var err error
		if undo, err = startUndo(); err != nil {
			refuse("undo log: %v", err)
		}
	}
	layer := diskfs.NewLayer(undo)
	var servers []*fuse.Server
	for _, d := range data {
		s, err := layer.Mount(d)
		if err != nil {
			refuse("%v (the kernel or the Engine refuses FUSE: the container needs /dev/fuse and CAP_SYS_ADMIN)", err)
		}
		servers = append(servers, s)
	}
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(diskfs.Port))
	if err != nil {
		refuse("control port: %v", err)
	}
	go http.Serve(ln, layer)

	if err := closeOnExec(); err != nil {
		refuse("%v", err)
	}
	cmd := exec.Command(flag.Arg(0), flag.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if *user != "" {
		cred, err := credential(*user)
		if err != nil {
			refuse("user %s: %v", *user, err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	signals := make(chan os.Signal, 16)
	signal.Notify(signals)
	if err := cmd.Start(); err != nil {
		unmount(servers)
		log.Printf("start %s: %v", flag.Arg(0), err)
		os.Exit(127)
	}
	go func() {
		for s := range signals {
			switch s {
			case syscall.SIGCHLD, syscall.SIGURG, syscall.SIGPIPE: // ours, not the program's
			default:
				cmd.Process.Signal(s)
			}
		}
	}()
	err = cmd.Wait()
	unmount(servers)
	var exit *exec.ExitError
	switch {
	case err == nil:
		os.Exit(0)
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(exit.ExitCode())
	}
	log.Print(err)
	os.Exit(1)
}

// startUndo opens the undo log and settles what the last life left in
// it: a power cut's mark rolls the unsynced writes back, anything else
// (a kill, a stop) kept them.
func startUndo() (*diskfs.Undo, error) {
	undo, err := diskfs.NewUndo(diskfs.UndoDir)
	if err != nil {
		return nil, err
	}
	mark := filepath.Join(diskfs.Dir, diskfs.PowerCut)
	if _, err := os.Stat(mark); err == nil {
		n, err := undo.Rollback()
		if err != nil {
			return nil, err
		}
		log.Printf("power cut: the unsynced writes to %d files are lost", n)
		return undo, os.Remove(mark)
	}
	return undo, undo.Discard()
}

// closeOnExec keeps every descriptor of the layer's from the program.
// go-fuse opens /dev/fuse without O_CLOEXEC: a program that held it
// would keep the FUSE connection alive after the layer died, and its
// own requests on it, never answered, would hold it in the kernel for
// good, a container no kill can end.
func closeOnExec() error {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}

func unmount(servers []*fuse.Server) {
	for _, s := range servers {
		s.Unmount()
	}
}

// refuse says why the program cannot start, and exits.
func refuse(format string, args ...any) {
	log.Printf(format, args...)
	os.Exit(diskfs.ExitRefused)
}

// credential resolves uid[:gid], or a user name in /etc/passwd, as the
// Engine resolves an image's USER.
func credential(user string) (*syscall.Credential, error) {
	name, group, _ := strings.Cut(user, ":")
	uid, gid, err := lookup(name)
	if err != nil {
		return nil, err
	}
	if group != "" {
		if gid, err = strconv.Atoi(group); err != nil {
			return nil, fmt.Errorf("group %q is not a number", group)
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func lookup(name string) (uid, gid int, err error) {
	if n, err := strconv.Atoi(name); err == nil {
		return n, n, nil
	}
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) > 3 && f[0] == name {
			uid, err1 := strconv.Atoi(f[2])
			gid, err2 := strconv.Atoi(f[3])
			return uid, gid, errors.Join(err1, err2)
		}
	}
	return 0, 0, fmt.Errorf("no user %s in /etc/passwd", name)
}
