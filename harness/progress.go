package harness

import (
	"fmt"
	"os"
	"time"

	"github.com/splitbrain/splitbrain/nemesis"
	"github.com/splitbrain/splitbrain/workloads"
)

// progress prints the live line: elapsed / time limit, operations by
// outcome, and who leads. On a terminal it rewrites one line every second;
// elsewhere (CI logs) it prints a line every ten seconds.
type progress struct {
	done chan struct{}
	quit chan struct{}
}

func startProgress(cfg Config, start time.Time, w *workloads.Writer, obs *workloads.Observer, nem *nemesis.Nemesis) *progress {
	p := &progress{done: make(chan struct{}), quit: make(chan struct{})}
	if cfg.Progress == nil {
		close(p.done)
		return p
	}
	tty := isTerminal(cfg.Progress)
	every := 10 * time.Second
	if tty {
		every = time.Second
	}
	total := cfg.TimeLimit + cfg.QuietPeriod
	line := func() string {
		leader, token := obs.Leader(4 * cfg.ObserveInterval)
		if leader == "" {
			leader, token = "none", 0
		}
		fault := nem.Active()
		if fault == "" {
			fault = "none"
		}
		return fmt.Sprintf("[%5.1fs/%.0fs] ok %d  failed %d  indeterminate %d  |  leader %s token %d  |  fault %s",
			time.Since(start).Seconds(), total.Seconds(),
			w.Stats.OK.Load(), w.Stats.Fail.Load(), w.Stats.Info.Load(), leader, token, fault)
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.quit:
				if tty {
					fmt.Fprintf(cfg.Progress, "\r%s\033[K\n", line())
				}
				return
			case <-t.C:
				if tty {
					fmt.Fprintf(cfg.Progress, "\r%s\033[K", line())
				} else {
					fmt.Fprintln(cfg.Progress, line())
				}
			}
		}
	}()
	return p
}

func (p *progress) stop() {
	select {
	case <-p.done:
	default:
		close(p.quit)
		<-p.done
	}
}

func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
