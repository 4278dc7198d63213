package targets

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/splitbrain/splitbrain/checkers"
)

// CatalogueFile holds the expected verdicts, beside the targets' folders.
const CatalogueFile = "catalogue.yaml"

// Families are the nemesis families of the catalogue's table, in order.
// "service" applies only to targets with service containers.
var Families = []string{"none", "partition", "pause", "kill", "clock", "service"}

// Catalogue is the verdict splitbrain must reach for each target under
// each nemesis family, and the checker that reaches it: correct targets
// must stay valid, flawed ones must be caught. `splitbrain catalogue`
// runs its rows; targets/README.md shows it as a table.
type Catalogue struct {
	Defaults RunSettings `yaml:"defaults"`
	Rows     []Row       `yaml:"rows"`
}

// RunSettings are the settings of a row's runs; a row's own override the
// catalogue's defaults, and zero means the harness's default.
type RunSettings struct {
	Nodes           int           `yaml:"nodes"`
	TimeLimit       time.Duration `yaml:"time_limit"`
	NemesisInterval time.Duration `yaml:"nemesis_interval"`
	QuietPeriod     time.Duration `yaml:"quiet_period"`
	RecoveryTimeout time.Duration `yaml:"recovery_timeout"`
	Seed            uint64        `yaml:"seed"`
	Resource        string        `yaml:"resource"`
}

// Row is one expectation: a target under one nemesis family.
type Row struct {
	Target string `yaml:"target"`
	Family string `yaml:"family"`
	// Nemesis narrows the family to the faults that expose the row's bug;
	// by default the run draws from the whole family.
	Nemesis []string `yaml:"nemesis"`
	// Promise judges the runs by another promise than the target's own,
	// such as a claim the seeds made for it.
	Promise string `yaml:"promise"`
	// Expect is "valid" or "invalid".
	Expect string `yaml:"expect"`
	// By are the checkers that must find the violation of an invalid row;
	// May are checkers that may find one too. Any other invalid checker
	// is a verdict that differs.
	By  []string `yaml:"by"`
	May []string `yaml:"may"`
	// Why says in a sentence what the row shows.
	Why string `yaml:"why"`

	RunSettings `yaml:",inline"`
}

// LoadCatalogue reads and validates a catalogue; every row must name a
// target of known (the targets' manifests).
func LoadCatalogue(path string, known []Manifest) (*Catalogue, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Catalogue
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	byName := make(map[string]Manifest, len(known))
	for _, m := range known {
		byName[m.Name] = m
	}
	for i, r := range c.Rows {
		if err := r.validate(byName); err != nil {
			return nil, fmt.Errorf("%s: row %d (%s, %s): %v", path, i+1, r.Target, r.Family, err)
		}
	}
	return &c, nil
}

func (r Row) validate(targets map[string]Manifest) error {
	m, ok := targets[r.Target]
	if !ok {
		return fmt.Errorf("unknown target %q", r.Target)
	}
	if !slices.Contains(Families, r.Family) {
		return fmt.Errorf("family %q is not one of %s", r.Family, strings.Join(Families, ", "))
	}
	if !m.Faces(r.Family) {
		return fmt.Errorf("no fault of the %s family reaches target %s (no services, or clock: none)", r.Family, r.Target)
	}
	for _, n := range r.Nemesis {
		if familyOf(n) != r.Family {
			return fmt.Errorf("nemesis %q is not of the %s family", n, r.Family)
		}
	}
	if r.Promise != "" {
		if _, err := checkers.ParsePromise(r.Promise); err != nil {
			return err
		}
	}
	switch {
	case r.Expect == "valid" && len(r.By)+len(r.May) > 0:
		return errors.New("a valid row names no checkers")
	case r.Expect == "invalid" && len(r.By) == 0:
		return errors.New("an invalid row names the checkers that find it (by)")
	case r.Expect != "valid" && r.Expect != "invalid":
		return fmt.Errorf("expect %q: want valid or invalid", r.Expect)
	}
	return nil
}

// familyOf is the family a fault belongs to: the service family holds the
// faults that hit services (kill-service, pause-service-all,
// partition-service), but a service's clock is clock's.
func familyOf(fault string) string {
	if strings.Contains(fault, "-service") && !strings.HasPrefix(fault, "clock-") {
		return "service"
	}
	family, _, _ := strings.Cut(fault, "-")
	return family
}

// Settings are the row's run settings over the catalogue's defaults.
func (c *Catalogue) Settings(r Row) RunSettings {
	s, d := r.RunSettings, c.Defaults
	return RunSettings{
		Nodes:           cmp.Or(s.Nodes, d.Nodes),
		TimeLimit:       cmp.Or(s.TimeLimit, d.TimeLimit),
		NemesisInterval: cmp.Or(s.NemesisInterval, d.NemesisInterval),
		QuietPeriod:     cmp.Or(s.QuietPeriod, d.QuietPeriod),
		RecoveryTimeout: cmp.Or(s.RecoveryTimeout, d.RecoveryTimeout),
		Seed:            cmp.Or(s.Seed, d.Seed),
		Resource:        cmp.Or(s.Resource, d.Resource),
	}
}

// Faults is what --nemesis gets: the row's narrowed faults, or its family.
func (r Row) Faults() []string {
	if len(r.Nemesis) > 0 {
		return r.Nemesis
	}
	return []string{r.Family}
}

// Judge compares a run's report with the row's expectation: nil when the
// verdict is the expected one.
func (r Row) Judge(rep checkers.Report) error {
	invalid := Invalid(rep)
	if r.Expect == "valid" {
		if rep.Valid != checkers.Valid {
			return fmt.Errorf("want valid, got %s%s", rep.Valid, list(invalid))
		}
		return nil
	}
	if rep.Valid != checkers.Invalid {
		return fmt.Errorf("want invalid by %s, got %s", strings.Join(r.By, ", "), rep.Valid)
	}
	for _, c := range r.By {
		if !slices.Contains(invalid, c) {
			return fmt.Errorf("want invalid by %s, got invalid%s", strings.Join(r.By, ", "), list(invalid))
		}
	}
	for _, c := range invalid {
		if !slices.Contains(r.By, c) && !slices.Contains(r.May, c) {
			return fmt.Errorf("%s found a violation the row does not expect", c)
		}
	}
	return nil
}

// Invalid lists the checkers of rep that found a violation, sorted.
func Invalid(rep checkers.Report) []string {
	var out []string
	for name, res := range rep.Checkers {
		if res.Valid == checkers.Invalid {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// FirstViolation is the time, since the run started, of the earliest
// violation in rep, and false if there is none.
func FirstViolation(rep checkers.Report) (time.Duration, bool) {
	first, found := time.Duration(0), false
	for _, res := range rep.Checkers {
		for _, v := range res.Violations {
			if at := time.Duration(v.Time); !found || at < first {
				first, found = at, true
			}
		}
	}
	return first, found
}

func list(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return " by " + strings.Join(names, ", ")
}

// Label names the row's line of the table: the target, and what the row
// changes about how it is run or judged.
func (r Row) Label() string {
	l := r.Target
	if r.Resource != "" {
		l += ", resource " + r.Resource
	}
	if r.Promise != "" {
		l += ", judged as " + r.Promise
	}
	return l
}

// cell is the row's entry in the table.
func (r Row) cell() string {
	s := r.Expect
	if r.Expect == "invalid" {
		s = "**invalid**: " + strings.Join(r.By, ", ")
	}
	if len(r.May) > 0 {
		s += " (maybe " + strings.Join(r.May, ", ") + ")"
	}
	if len(r.Nemesis) > 0 {
		s += ", under " + strings.Join(r.Nemesis, ", ")
	}
	return s
}

// Markdown renders the catalogue as the table of targets/README.md: a line
// per target (and per way of running or judging it), a column per family.
func (c *Catalogue) Markdown() string {
	var (
		labels []string
		cells  = map[string]map[string]string{}
	)
	for _, r := range c.Rows {
		l := r.Label()
		if cells[l] == nil {
			labels = append(labels, l)
			cells[l] = map[string]string{}
		}
		// A family can have several rows (the family, and a fault of it
		// that must find something else): the cell shows each.
		if prev := cells[l][r.Family]; prev != "" {
			cells[l][r.Family] = prev + "; " + r.cell()
		} else {
			cells[l][r.Family] = r.cell()
		}
	}
	var b strings.Builder
	b.WriteString("| target | " + strings.Join(Families, " | ") + " |\n")
	b.WriteString("|---" + strings.Repeat("|---", len(Families)) + "|\n")
	for _, l := range labels {
		b.WriteString("| " + l)
		for _, f := range Families {
			b.WriteString(" | " + cmp.Or(cells[l][f], "–"))
		}
		b.WriteString(" |\n")
	}
	return b.String()
}
