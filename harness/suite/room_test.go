package suite

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// machine drives a Gate on a fake clock and a fake 2-core CPU, measured
// every second: each run under way keeps each cores busy, and other work
// other cores. The test reads when runs started, in seconds since the
// start.
type machine struct {
	t           *testing.T
	gate        *Gate
	start       time.Time
	now         time.Duration
	cpu         CPU
	running     int
	each, other float64
	starts      []string
}

const ticksPerSecond = 100 // per core, as /proc/stat counts

func newMachine(t *testing.T, each float64) *machine {
	return &machine{t: t, gate: NewGate(2), start: time.Date(2026, 11, 27, 4, 0, 0, 0, time.UTC), each: each}
}

// run lets d pass, a look every second.
func (m *machine) run(d time.Duration) *machine {
	for end := m.now + d; m.now < end; m.now += time.Second {
		if m.now > 0 {
			busy := min(m.other+m.each*float64(m.running), float64(m.gate.Cores))
			m.cpu.Total += uint64(m.gate.Cores * ticksPerSecond)
			m.cpu.Idle += uint64((float64(m.gate.Cores) - busy) * ticksPerSecond)
		}
		if m.gate.Step(m.start.Add(m.now), m.cpu, m.running) {
			m.running++
			m.starts = append(m.starts, m.now.String())
		}
	}
	return m
}

func (m *machine) want(starts ...string) {
	m.t.Helper()
	if got, want := strings.Join(m.starts, " "), strings.Join(starts, " "); got != want {
		m.t.Errorf("started at %s\nwant         %s", got, want)
	}
}

// On an idle machine runs start a Window apart while at least FreeCores
// stay idle: runs of 0.4 core each leave 1.6, 1.2, 0.8, then 0.4.
func TestGateFillsAnIdleMachine(t *testing.T) {
	m := newMachine(t, 0.4)
	m.run(time.Minute)
	m.want("0s", "5s", "10s", "15s")
}

// Other work on the machine (an image build) holds the next run back
// until it is done; the first always starts.
func TestGateMakesWayForOtherWork(t *testing.T) {
	m := newMachine(t, 0.4)
	m.other = 1.5
	m.run(30 * time.Second)
	m.want("0s")
	m.other = 0
	// The build ends in the 30th second: at 32 s the window (27-32 s)
	// averages a core idle; then a run every Window, as on an idle machine.
	m.run(30 * time.Second)
	m.want("0s", "32s", "37s", "42s")
}

// A start's cost is measured only once it had a Window to show: a run
// whose start took the whole machine for its first seconds holds the next
// back, though the CPU was idle before it.
func TestGateWaitsForAStartToShow(t *testing.T) {
	m := newMachine(t, 2)
	m.run(20 * time.Second)
	m.want("0s")
}

// At most two runs per core, however idle the CPU; at least one, however
// busy.
func TestGateBounds(t *testing.T) {
	m := newMachine(t, 0)
	m.run(time.Minute)
	m.want("0s", "5s", "10s", "15s")

	m = newMachine(t, 0)
	m.other = 2
	m.run(time.Minute)
	m.want("0s")
}

// A run that ends makes room: the next starts once a window shows the
// CPU it freed.
func TestGateRefillsWhenARunEnds(t *testing.T) {
	m := newMachine(t, 0.6) // 0.8 idle with two, 0.2 with three
	m.run(30 * time.Second)
	m.want("0s", "5s", "10s")
	m.running-- // one ends in the 30th second: 0.8 core idle again
	m.run(10 * time.Second)
	m.want("0s", "5s", "10s", "34s") // the first whole window after it
}

func TestParseParallel(t *testing.T) {
	for s, want := range map[string]int{"auto": Auto, "1": 1, "4": 4} {
		if got, err := ParseParallel(s); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", s, got, err, want)
		}
	}
	for _, bad := range []string{"0", "-1", "", "four", "Auto"} {
		if _, err := ParseParallel(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseCPU(t *testing.T) {
	c, err := parseCPU("cpu  4705 356 584 3699176 23060 0 277 0 11 0\n")
	if err != nil || c.Idle != 3699176 || c.Total != 4705+356+584+3699176+23060+277 {
		t.Errorf("%+v, %v", c, err)
	}
	for _, bad := range []string{"", "intr 1 2 3", "cpu 1 2 x 4"} {
		if _, err := parseCPU(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if _, err := ReadCPU(); err != nil {
		t.Logf("no /proc/stat here: %v", err)
	}
}

// A runner of N runs at once has room below N; an Auto one follows a
// Gate, or takes a run per core where the CPU cannot be read. All on
// this machine's engine.
func TestRunnerRoom(t *testing.T) {
	here := func(room func(map[string]int) (string, bool), running int) bool {
		place, ok := room(map[string]int{"": running})
		if ok && place != "" {
			t.Errorf("a runner without places started a run on %q", place)
		}
		return ok
	}
	room := Runner{Parallel: 3}.room()
	if !here(room, 2) || here(room, 3) {
		t.Error("three at once: room for a third, not a fourth")
	}
	blind := Runner{CPU: func() (CPU, error) { return CPU{}, errors.New("no /proc/stat") }}.room()
	if !here(blind, runtime.NumCPU()-1) || here(blind, runtime.NumCPU()) {
		t.Errorf("auto without a CPU to read: want a run per core (%d)", runtime.NumCPU())
	}
	busy := Runner{CPU: func() (CPU, error) { return CPU{Total: 1}, nil }}.room()
	if !here(busy, 0) || here(busy, 1) {
		t.Error("auto: the first run starts, the second waits for a window's measure")
	}
}

// Runs spread over places start, one after another, on the least busy
// for its size: a place of two takes two for another's one.
func TestRunnerPlaces(t *testing.T) {
	room := Runner{Parallel: 1, Places: []Place{{"a", 2}, {"b", 1}, {"c", 1}}}.room()
	running := map[string]int{}
	var order []string
	for {
		place, ok := room(running)
		if !ok {
			break
		}
		running[place]++
		order = append(order, place)
	}
	if want := []string{"a", "b", "c", "a"}; !slices.Equal(order, want) {
		t.Errorf("runs started on %v, want %v", order, want)
	}
	running["b"]--
	if place, ok := room(running); !ok || place != "b" {
		t.Errorf("a run on b ended: the next went to %q (%v), want b", place, ok)
	}
}
