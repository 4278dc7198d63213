package harness

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/splitbrain/splitbrain/results"
	"github.com/splitbrain/splitbrain/targets"
)

// Running is a target started as `splitbrain run` starts it (its images,
// a network of its own, the resource, its services, its nodes, every node
// healthy) with no workload and no faults: for a command that questions
// the nodes itself. Down removes it.
type Running struct {
	r *run
}

// Up starts the target cfg names, with cfg.Nodes nodes and the resource in
// cfg.Resource's mode; cfg's workload, nemesis and results settings are
// not used. When Up fails, nothing it started is left running; when it
// succeeds, the caller must call Down, also after a Ctrl-C.
//
// The containers' logs go to a folder of their own (Dir), which the
// caller removes when it no longer needs them.
func Up(ctx context.Context, cfg Config) (_ *Running, err error) {
	r, err := prepare(cfg)
	if err != nil {
		return nil, err
	}
	if r.docker, err = ConnectDocker(ctx); err != nil {
		return nil, err
	}
	r.docker.Progress = cfg.Progress
	up := &Running{r: r}
	defer func() {
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			err = ctx.Err() // whichever step it cut short
		}
		err = errors.Join(err, up.Down(ctx), os.RemoveAll(r.dir))
	}()
	if r.dir, err = (results.Store{Root: os.TempDir()}).Create(r.info.ID); err != nil {
		return up, err
	}
	if err := r.buildImages(ctx); err != nil {
		return up, err
	}
	return up, r.startCluster(ctx)
}

// Down saves every container's log into Dir, then removes every container
// and the network, even when ctx was cancelled (by the Ctrl-C that may
// have brought the caller here).
func (u *Running) Down(ctx context.Context) error {
	defer u.r.docker.Close()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	return u.r.teardown(ctx)
}

// ID names the containers' run: they carry it in their LabelRun label.
func (u *Running) ID() string { return u.r.info.ID }

// Manifest is the target's, as read and checked.
func (u *Running) Manifest() targets.Manifest { return u.r.manifest }

// Dir holds the containers' logs (under results.LogsDir) once Down
// returned, and the resource's decision log.
func (u *Running) Dir() string { return u.r.dir }

func (u *Running) Nodes() []string { return u.r.cluster.Nodes() }

// NodeURL is the base URL of node's API, reached on the run's network.
func (u *Running) NodeURL(node string) string { return u.r.cluster.NodeURL(node) }

// ResourceURL is the base URL of the resource, reached on the run's
// network.
func (u *Running) ResourceURL() string { return u.r.cluster.ResourceURL() }
