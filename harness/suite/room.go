package suite

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Auto, as Runner.Parallel (`--parallel auto`), lets the machine decide
// how many runs go at once: see Gate.
const Auto = 0

// ParseParallel reads --parallel: "auto", or a count of at least 1.
func ParseParallel(s string) (int, error) {
	if s == "auto" {
		return Auto, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("--parallel %q: want auto or a count of at least 1", s)
	}
	return n, nil
}

// CPU is the machine's CPU time so far, in clock ticks over all its
// cores: /proc/stat's first line. Idle is the time no core had anything
// to run; time waiting on the disk is not idle, since a run starting or
// restarting containers waits on it as much as on the CPU.
type CPU struct{ Idle, Total uint64 }

// ReadCPU reads the machine's CPU time from /proc/stat.
func ReadCPU() (CPU, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return CPU{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return CPU{}, fmt.Errorf("/proc/stat: %v", err)
	}
	return parseCPU(line)
}

// parseCPU reads /proc/stat's "cpu user nice system idle iowait irq
// softirq steal ..." line: the guest times after steal are counted in
// user already.
func parseCPU(line string) (CPU, error) {
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return CPU{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var c CPU
	for i, f := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return CPU{}, fmt.Errorf("/proc/stat: %q: %v", line, err)
		}
		c.Total += v
		if i == 3 {
			c.Idle = v
		}
	}
	return c, nil
}

// Gate decides, for --parallel auto, when a suite may start another run:
// only while the machine has room for it, as the CPU it left idle lately
// shows.
//
// A run is a cluster whose faults are timed: a kill, a restart, a pause
// and its thaw must each happen within the target's own timings, and on
// a machine with no CPU to spare they do not (at a load of 20-29, four
// runs at once on 2 cores with image builds beside them, two catalogue
// rows that must find a violation came back valid). So the gate starts
// another run while at least FreeCores of the cores were idle over the
// last Window, measured only after the previous start has had Window to
// show its cost. On an idle 2-core machine that is four runs of the
// catalogue: three leave about half the CPU idle, four about a quarter
// (README.md, "The catalogue's time"), which held every verdict; anything
// else that takes the CPU (an image build, a heavy system's start, other
// work on the machine) holds the next run back until it is done. At least
// one run always goes, so a suite ends on any machine; at most two per
// core, past which the Docker Engine itself stalls pauses and restarts
// whatever the CPU shows (runs spend much of their time waiting, and a
// few heavy ones starting together still swamp it).
//
// Gate is a state machine with no clock and no I/O: its caller samples
// the CPU, and starts a run each time Step says so.
type Gate struct {
	Cores int
	// samples are the CPU's, oldest first: the newest one at or before
	// the window's start, and those after it.
	samples []cpuSample
	started time.Time // the last start; zero before the first
}

type cpuSample struct {
	at  time.Time
	cpu CPU
}

// The gate's thresholds, explained at Gate.
const (
	// Window is how long a start is given to show its cost, and how far
	// back the idle CPU is measured.
	Window = 5 * time.Second
	// FreeCores is how much idle CPU, in cores, another run needs: about
	// what an average catalogue run takes (a 2-core machine running four
	// was 73% busy, about 0.4 core each), and half as much again for the
	// start's burst.
	FreeCores = 0.75
)

// NewGate gates runs on a machine of cores cores.
func NewGate(cores int) *Gate { return &Gate{Cores: max(cores, 1)} }

// Step takes the CPU measured at now, with running runs under way, and
// says whether to start another now; if so the caller must.
func (g *Gate) Step(now time.Time, cpu CPU, running int) bool {
	g.samples = append(g.samples, cpuSample{now, cpu})
	for len(g.samples) > 1 && !g.samples[1].at.After(now.Add(-Window)) {
		g.samples = g.samples[1:]
	}
	if running >= 2*g.Cores {
		return false
	}
	if running > 0 && (now.Sub(g.started) < Window || g.idleCores(now) < FreeCores) {
		return false
	}
	g.started = now
	return true
}

// idleCores is how many cores were idle, on average, over the Window
// before now; zero when the samples do not cover it.
func (g *Gate) idleCores(now time.Time) float64 {
	first, last := g.samples[0], g.samples[len(g.samples)-1]
	if now.Sub(first.at) < Window || last.cpu.Total <= first.cpu.Total {
		return 0
	}
	share := float64(last.cpu.Idle-first.cpu.Idle) / float64(last.cpu.Total-first.cpu.Total)
	return share * float64(g.Cores)
}
