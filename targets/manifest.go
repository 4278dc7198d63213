// Package targets finds and reads the manifests of the implementations under test.
package targets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"gopkg.in/yaml.v3"
)

// ManifestFile is the name of a target's manifest inside its folder.
const ManifestFile = "target.yaml"

// DefaultPort is the node API port when a manifest names none.
const DefaultPort = contract.DefaultPort

// DefaultStopSignal is Manifest.StopSignal when a manifest gives none:
// what Docker and Kubernetes send.
const DefaultStopSignal = "SIGTERM"

// StopSignals are the signals a manifest may name to stop a node
// gracefully.
var StopSignals = []string{"SIGTERM", "SIGINT", "SIGQUIT", "SIGHUP", "SIGUSR1", "SIGUSR2"}

// MaxCommLen is the longest command name the kernel keeps of a process
// (TASK_COMM_LEN less its NUL).
const MaxCommLen = 15

// DefaultZones is Manifest.Zones when a manifest gives none: three, as a
// cloud region's availability zones, so that no zone holds a majority.
const DefaultZones = 3

// DefaultReaction is Manifest.Reaction when a manifest gives none: long
// enough for most elections and leases, at the cost of slower faults.
const DefaultReaction = 5 * time.Second

// How a target's nodes read wall time (Manifest.Clock).
const (
	ClockSDK      = "sdk"
	ClockFaketime = "faketime"
	// ClockNone: the nodes read no wall clock that can be skewed (an
	// elector that only counts monotonic time, beside a server that cannot
	// run under libfaketime). Clock faults on them would prove nothing,
	// so they are refused rather than passed.
	ClockNone = "none"
	// ClockProcess: a clock sidecar patches the vDSO of every process in
	// the container (nemesis/vdsoclock), whatever it runs: a Go binary's
	// wall and monotonic clocks, a libc program's, a JVM's.
	ClockProcess = "process"
)

// How a target's nodes time their waits (Manifest.Waits), which decides
// whether a clock rate through a clock: process sidecar is faithful.
const (
	// WaitsRelative: the nodes wait for durations (Go's runtime), which a
	// rate stretches as a real clock's would.
	WaitsRelative = "relative"
	// WaitsAbsolute: the nodes wait until absolute deadlines on the
	// monotonic clock (Python's and the JVM's timed waits): the sidecar
	// moves what they read, not the kernel's timers, so under a rate
	// their waits last the time gained longer, or end at once, which no
	// real machine does. Rate faults on their nodes are refused.
	WaitsAbsolute = "absolute"
)

// Manifest describes one target: how to build its node image and what it
// promises about leadership. targets/README.md documents every field.
type Manifest struct {
	// Name names the target for --target and its image; lower case
	// letters, digits, '.', '_' and '-'.
	Name string `yaml:"name"`
	// Description is one line for `splitbrain targets`.
	Description string `yaml:"description"`
	Build       Build  `yaml:"build"`
	// Port is the node API port inside each node container.
	Port int `yaml:"port"`
	// Env is extra environment for every node. SPLITBRAIN_* is the
	// harness's own and cannot be set here.
	Env map[string]string `yaml:"env"`
	// Services are the containers a target needs besides its nodes (an
	// etcd, a Redis, a lock server): started before the nodes, on the
	// same network, and open to the nemesis's service faults.
	Services []Service `yaml:"services"`
	// Clock says how the nodes read wall time, so that clock faults reach
	// them: "sdk" (the default: a Go target reading sdk.Clock),
	// "faketime" (libfaketime, preloaded from the node image's Debian
	// package, follows a timestamp file the harness rewrites), "process"
	// (a sidecar patches every process's vDSO) or "none".
	Clock string `yaml:"clock"`
	// Waits says how the nodes time their waits, for clock: process:
	// "relative" (the default) or "absolute" (no rate faults).
	Waits string `yaml:"waits"`
	// Promise is what the target claims: "exclusive", "overlap-bound: D"
	// or "fenced". The checkers read it to tell violations from risks.
	Promise string `yaml:"promise"`
	// Reaction is the longest the target takes to react to a fault: to
	// elect a new leader once its leader is lost, or to step down once cut
	// off (its election timeout, a lease's life and a renewal). The
	// nemesis heals a fault nobody reacted to after it; DefaultReaction
	// when not given.
	Reaction time.Duration `yaml:"reaction"`
	// StartTimeout is the longest its cluster may take to start, every
	// node healthy, when that is more than a run's --start-timeout (the
	// larger of the two holds): a target whose nodes bootstrap a database.
	StartTimeout time.Duration `yaml:"start_timeout"`
	// Zones is how many zones (2 or 3) partition-zones spreads the nodes
	// and the services' members over, round robin; DefaultZones when not
	// given.
	Zones int `yaml:"zones"`
	// Processes are the command names of the node's processes that
	// pause-process may stop (a member under its agent, a JVM), each
	// while the rest of the container runs on: the name the kernel keeps
	// (/proc/PID/comm, its executable's name cut to 15 bytes). None:
	// pause-process refuses the target.
	Processes []string `yaml:"processes"`
	// StopSignal is the signal a graceful stop sends a node (stop-leader,
	// restart-rolling), as a deploy's does: DefaultStopSignal when not
	// given. A node not stopped within StopGrace is killed.
	StopSignal string `yaml:"stop_signal"`
	// Data are the node's data directories (absolute paths), which disk
	// faults reach: the image must hold them (a Go target's build makes
	// them). None: disk faults refuse the target.
	Data []string `yaml:"data"`
	// OwnData says the nodes serve the node API's register in the
	// system's own store (contract.DataPath): the workload then reads and
	// writes it too, reads it on every node at the end, and the checkers
	// judge what the store acknowledged.
	OwnData bool `yaml:"own_data"`

	// Dir is the absolute folder the manifest was read from.
	Dir string `yaml:"-"`
}

// Service is one extra container of a target. Its name is its host name on
// the run's network; nodes find every service in SPLITBRAIN_SERVICES.
type Service struct {
	// Name is the service's host name: lower case letters, digits and
	// '-', neither a node's name (n1, n2...) nor "resource".
	Name  string `yaml:"name"`
	Build Build  `yaml:"build"`
	// Port is where the service listens; the nodes start once it accepts
	// connections there (and, with Health, once that path answers 200).
	Port int `yaml:"port"`
	// Health is an optional HTTP path that answers 200 once the service is
	// ready; without it a TCP connection to Port is enough.
	Health string `yaml:"health"`
	// Ready is an optional command run inside each member, again and
	// again, until it exits 0: the service is ready then, not before (a
	// Sentinel that can reach its quorum, an etcd member that has joined).
	Ready []string `yaml:"ready"`
	// Leader is an optional command run inside each member to find the
	// one that leads the service (ZooKeeper's leader, etcd's): it exits 0
	// in that member only. partition-service-members isolates the member
	// it names; without it, a random minority.
	Leader []string `yaml:"leader"`
	// Env is the service's environment.
	Env map[string]string `yaml:"env"`
	// Members is how many containers form the service (a three-member
	// etcd, three Sentinels): each its own container, named Name1, Name2...
	// With 0 or 1 there is one container, named Name.
	Members int `yaml:"members"`
	// Beside places the members on the nodes' hosts instead, as a
	// Sentinel or an etcd member is deployed beside each server: "nodes"
	// (BesideNodes) puts one beside every node, a number N one beside
	// each of n1..nN. A member beside node ni is named Name<i> and shares
	// the node's network namespace, so every fault of the node (a kill, a
	// pause, a partition) reaches it too. Empty: members of their own.
	Beside string `yaml:"beside"`
	// Clock is "faketime" for a service whose wall clock the clock-service
	// fault may skew through libfaketime (a Redis whose keys expire by it);
	// empty for one it may not.
	Clock string `yaml:"clock"`
	// Processes are the command names of a member's processes that
	// pause-process-service may stop, as Manifest.Processes.
	Processes []string `yaml:"processes"`
	// Data are a member's data directories, which the disk faults on
	// services reach, as Manifest.Data. None: they refuse the service.
	Data []string `yaml:"data"`
	// Start says when the service starts: "before-nodes" (the default: the
	// nodes may need it from their first moment) or "after-nodes" (it
	// needs the nodes, as a Sentinel must resolve its primary's name).
	Start string `yaml:"start"`
}

// When a service starts (Service.Start).
const (
	StartBeforeNodes = "before-nodes"
	StartAfterNodes  = "after-nodes"
)

// MaxMembers bounds Service.Members: a service cluster, not a fleet.
const MaxMembers = 9

// MaxNodes bounds a run's nodes, and so the members placed beside them.
const MaxNodes = 99

// BesideNodes is Service.Beside for a member beside every node.
const BesideNodes = "nodes"

// Member is one container of a service, as a run of some number of nodes
// places it.
type Member struct {
	// Name is its container's name, which resolves to its address on the
	// run's network.
	Name string
	// Node is the node whose host it shares (network namespace, address
	// and fate); "" for a member in a container of its own.
	Node string
}

// Placed are the service's containers in a run of nodes nodes, in order.
func (s Service) Placed(nodes int) []Member {
	if s.Beside == "" && s.Members <= 1 {
		return []Member{{Name: s.Name}}
	}
	n := s.Members
	if s.Beside != "" {
		n = s.besideCount(nodes)
	}
	out := make([]Member, n)
	for i := range out {
		out[i].Name = fmt.Sprintf("%s%d", s.Name, i+1)
		if s.Beside != "" {
			out[i].Node = fmt.Sprintf("n%d", i+1)
		}
	}
	return out
}

// MemberNames are the names of the service's containers in a run of
// nodes nodes, in order.
func (s Service) MemberNames(nodes int) []string {
	var names []string
	for _, m := range s.Placed(nodes) {
		names = append(names, m.Name)
	}
	return names
}

// besideCount is how many nodes of a run of nodes nodes have a member
// beside them: Beside's number, or every node. Beside is valid.
func (s Service) besideCount(nodes int) int {
	if s.Beside == BesideNodes {
		return nodes
	}
	n, _ := strconv.Atoi(s.Beside)
	return n
}

var (
	validName    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)
	validService = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	nodeName     = regexp.MustCompile(`^n[0-9]+$`)
	validEnv     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Load reads and validates the manifest in dir.
func Load(dir string) (Manifest, error) {
	var m Manifest
	abs, err := filepath.Abs(dir)
	if err != nil {
		return m, err
	}
	where := filepath.Join(abs, ManifestFile)
	b, err := os.ReadFile(where)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return m, fmt.Errorf("no %s in %s", ManifestFile, abs)
		}
		return m, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true) // a misspelt field is an error, not a silent default
	if err := dec.Decode(&m); err != nil && !errors.Is(err, io.EOF) {
		return m, fmt.Errorf("%s: %v", where, err)
	}
	if m.Port == 0 {
		m.Port = DefaultPort
	}
	if m.Waits == "" {
		m.Waits = WaitsRelative
	}
	if m.Clock == "" {
		m.Clock = ClockSDK
	}
	if m.Reaction == 0 {
		m.Reaction = DefaultReaction
	}
	if m.Zones == 0 {
		m.Zones = DefaultZones
	}
	if m.StopSignal == "" {
		m.StopSignal = DefaultStopSignal
	}
	for i := range m.Services {
		if m.Services[i].Start == "" {
			m.Services[i].Start = StartBeforeNodes
		}
		m.Services[i].Build.Dirs = m.Services[i].Data
	}
	m.Dir = abs
	m.Build.Dirs = m.Data
	if err := m.validate(); err != nil {
		return m, fmt.Errorf("%s: %v", where, err)
	}
	return m, nil
}

func (m Manifest) validate() error {
	switch {
	case m.Name == "":
		return errors.New("name is missing")
	case !validName.MatchString(m.Name):
		return fmt.Errorf("name %q: use lower case letters, digits, '.', '_' and '-'", m.Name)
	case m.Description == "" || strings.Contains(m.Description, "\n"):
		return errors.New("description must be one line")
	case m.Port < 1 || m.Port > 65535:
		return fmt.Errorf("port %d is out of range", m.Port)
	case m.Clock != ClockSDK && m.Clock != ClockFaketime && m.Clock != ClockProcess && m.Clock != ClockNone:
		return fmt.Errorf("clock %q: want %s, %s, %s or %s", m.Clock, ClockSDK, ClockFaketime, ClockProcess, ClockNone)
	case m.Waits != WaitsRelative && m.Waits != WaitsAbsolute:
		return fmt.Errorf("waits %q: want %s or %s", m.Waits, WaitsRelative, WaitsAbsolute)
	case m.Reaction < 0:
		return fmt.Errorf("reaction %s must be positive", m.Reaction)
	case m.StartTimeout < 0:
		return fmt.Errorf("start_timeout %s must be positive", m.StartTimeout)
	case m.Zones < 2 || m.Zones > 3:
		return fmt.Errorf("zones %d: want 2 or 3", m.Zones)
	case m.Clock == ClockFaketime && m.Build.Dockerfile == "" && len(m.Build.Debian) == 0:
		return fmt.Errorf("clock: %s needs libfaketime in the node image: a FROM scratch image has none (add build.debian)", ClockFaketime)
	case !slices.Contains(StopSignals, m.StopSignal):
		return fmt.Errorf("stop_signal %q: want one of %s", m.StopSignal, strings.Join(StopSignals, ", "))
	}
	if err := validateProcesses(m.Processes, "processes"); err != nil {
		return err
	}
	if err := validateData(m.Data, "data"); err != nil {
		return err
	}
	if err := m.Build.validate(m.Dir, "build"); err != nil {
		return err
	}
	if err := validateEnv(m.Env, "env"); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, s := range m.Services {
		if err := s.validate(m.Dir, fmt.Sprintf("services[%d]", i)); err != nil {
			return err
		}
		// The most containers the service can have: one beside each of
		// the most nodes a run may have.
		for _, name := range s.MemberNames(MaxNodes) {
			if seen[name] {
				return fmt.Errorf("services: two containers would be named %q", name)
			}
			seen[name] = true
		}
	}
	if m.Promise == "" {
		return errors.New("promise is missing (exclusive, overlap-bound: D, or fenced)")
	}
	if _, err := contract.ParsePromise(m.Promise); err != nil {
		return err
	}
	return nil
}

// validateData wants each data directory absolute, clean, not the root,
// and apart from the others: the disk-fault layer mounts over each.
func validateData(dirs []string, field string) error {
	for i, d := range dirs {
		switch {
		case !path.IsAbs(d) || path.Clean(d) != d:
			return fmt.Errorf("%s: %q is not a clean absolute path", field, d)
		case d == "/":
			return fmt.Errorf("%s: / is the whole image, not a data directory", field)
		}
		for _, e := range dirs[:i] {
			if e == d || strings.HasPrefix(d, e+"/") || strings.HasPrefix(e, d+"/") {
				return fmt.Errorf("%s: %s and %s overlap", field, e, d)
			}
		}
	}
	return nil
}

func validateEnv(env map[string]string, field string) error {
	for k := range env {
		switch {
		case !validEnv.MatchString(k):
			return fmt.Errorf("%s: %q is not a variable name", field, k)
		case strings.HasPrefix(k, contract.EnvPrefix):
			return fmt.Errorf("%s: %s is the harness's own (docs/contract.md, Environment)", field, k)
		}
	}
	return nil
}

func (s Service) validate(dir, field string) error {
	switch {
	case s.Name == "":
		return fmt.Errorf("%s: name is missing", field)
	case !validService.MatchString(s.Name):
		return fmt.Errorf("%s: name %q: use lower case letters, digits and '-', starting with a letter", field, s.Name)
	case nodeName.MatchString(s.Name) || s.Name == "resource" || strings.HasSuffix(s.Name, "-netfilter"):
		return fmt.Errorf("%s: name %q is taken by the harness (nodes are n1, n2...; the resource is \"resource\"; their packet filters end in -netfilter)", field, s.Name)
	case s.Port < 1 || s.Port > 65535:
		return fmt.Errorf("%s (%s): port is missing or out of range", field, s.Name)
	case s.Health != "" && !strings.HasPrefix(s.Health, "/"):
		return fmt.Errorf("%s (%s): health must be a path starting with /", field, s.Name)
	case s.Members < 0 || s.Members > MaxMembers:
		return fmt.Errorf("%s (%s): members must be 1 to %d", field, s.Name, MaxMembers)
	case s.Start != "" && s.Start != StartBeforeNodes && s.Start != StartAfterNodes:
		return fmt.Errorf("%s (%s): start %q: want %s or %s", field, s.Name, s.Start, StartBeforeNodes, StartAfterNodes)
	case s.Clock != "" && s.Clock != ClockFaketime && s.Clock != ClockProcess:
		return fmt.Errorf("%s (%s): clock %q: want %s, %s or nothing", field, s.Name, s.Clock, ClockFaketime, ClockProcess)
	case s.Clock == ClockProcess && s.Beside != "":
		// Its clock sidecar would share the node's network namespace,
		// and the port, with the node's.
		return fmt.Errorf("%s (%s): clock: %s on a service placed beside nodes is not supported", field, s.Name, ClockProcess)
	case s.Clock == ClockFaketime && len(s.Build.Debian) == 0:
		return fmt.Errorf("%s (%s): clock: %s needs libfaketime in the image: give build.debian", field, s.Name, ClockFaketime)
	case (s.Members > 1 || s.Beside != "") && s.Name == "n":
		return fmt.Errorf("%s: name %q would name its members n1, n2..., the nodes' names", field, s.Name)
	case s.Beside != "" && s.Members != 0:
		return fmt.Errorf("%s (%s): members and beside: give one (beside places a member beside each node it names)", field, s.Name)
	case s.Beside != "" && len(s.Data) > 0:
		// Its disk-fault layer would share the node's network namespace,
		// and the port, with the node's.
		return fmt.Errorf("%s (%s): data on a service placed beside nodes is not supported", field, s.Name)
	}
	if n, err := strconv.Atoi(s.Beside); s.Beside != "" && s.Beside != BesideNodes && (err != nil || n < 1 || n > MaxNodes) {
		return fmt.Errorf("%s (%s): beside %q: want %s (a member beside every node) or a number of nodes from 1 to %d (beside n1, n2...)", field, s.Name, s.Beside, BesideNodes, MaxNodes)
	}
	if err := s.Build.validate(dir, field+".build"); err != nil {
		return err
	}
	if err := validateProcesses(s.Processes, field+".processes"); err != nil {
		return err
	}
	if err := validateData(s.Data, field+".data"); err != nil {
		return err
	}
	return validateEnv(s.Env, field+".env")
}

// validateProcesses refuses a command name the kernel could not keep: a
// path, a blank, one longer than it keeps (which would never match).
func validateProcesses(names []string, field string) error {
	for _, n := range names {
		switch {
		case n == "" || strings.ContainsAny(n, "/ \t\n"):
			return fmt.Errorf("%s: %q is not a command name (the executable's name, no path)", field, n)
		case len(n) > MaxCommLen:
			return fmt.Errorf("%s: %q is longer than the %d bytes the kernel keeps of a command name: give %q", field, n, MaxCommLen, n[:MaxCommLen])
		}
	}
	return nil
}

// Faces says whether a nemesis family can reach the target at all: the
// service family only a target with services, the clock family only one
// with a clock that can be skewed, its nodes' or a service's.
func (m Manifest) Faces(family string) bool {
	switch family {
	case "service":
		return len(m.Services) > 0
	case "clock":
		return m.Clock != ClockNone || slices.ContainsFunc(m.Services, func(s Service) bool { return s.Clock != "" })
	}
	return true
}

// Fits says whether a run of nodes nodes has every node the services are
// placed beside.
func (m Manifest) Fits(nodes int) error {
	for i, s := range m.Services {
		if n := s.besideCount(nodes); n > nodes {
			return fmt.Errorf("%s: services[%d] (%s): beside %d needs at least %d nodes, not %d",
				filepath.Join(m.Dir, ManifestFile), i, s.Name, n, n, nodes)
		}
	}
	return nil
}

// System names the real system the target's nodes or services run, as
// they are built: "etcd v3.6.16", "debian redis-server", or "" when every
// image is a Go program alone. Targets on one system weigh alike on a
// machine.
func (m Manifest) System() string {
	for _, b := range m.builds() {
		if system := b.System(); system != "" {
			return system
		}
	}
	return ""
}

// Bases names what the target's images stand on, each once, in the
// order of its builds: "debian bookworm", "etcd v3.6.16",
// "kube-apiserver v1.37.2". With the Go modules its programs embed,
// they are the versions of the real systems it runs.
func (m Manifest) Bases() []string {
	var out []string
	for _, b := range m.builds() {
		k, ok := b.Base()
		if !ok {
			continue
		}
		base := k.Field + " " + strings.Join(k.value(b), " ")
		if k.Field == "debian" {
			base = "debian " + b.DebianRelease()
		}
		if !slices.Contains(out, base) {
			out = append(out, base)
		}
	}
	return out
}

// StandsOn says whether any image of m, its nodes' or a service's, is
// made on a base of kind field (a Kind's Field: "kube-apiserver").
func (m Manifest) StandsOn(field string) bool {
	return slices.ContainsFunc(m.builds(), func(b Build) bool {
		k, ok := b.Base()
		return ok && k.Field == field
	})
}

// builds are the target's builds: its nodes', then each service's.
func (m Manifest) builds() []Build {
	out := []Build{m.Build}
	for _, s := range m.Services {
		out = append(out, s.Build)
	}
	return out
}

// Find returns the target called name among the folders of root.
func Find(root, name string) (Manifest, error) {
	all, err := List(root)
	if err != nil {
		return Manifest{}, err
	}
	var names []string
	for _, m := range all {
		if m.Name == name {
			return m, nil
		}
		names = append(names, m.Name)
	}
	return Manifest{}, fmt.Errorf("unknown target %q (known: %s)", name, strings.Join(names, ", "))
}

// List reads every manifest one level below root, sorted by name. Two
// folders that give the same name are an error: --target could not tell
// them apart.
func List(root string) ([]Manifest, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	seen := map[string]string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err != nil {
			continue
		}
		m, err := Load(dir)
		if err != nil {
			return nil, err
		}
		if other, ok := seen[m.Name]; ok {
			return nil, fmt.Errorf("targets %s and %s are both named %q", other, m.Dir, m.Name)
		}
		seen[m.Name] = m.Dir
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
