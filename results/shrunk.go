package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strconv"

	"github.com/splitbrain/splitbrain/nemesis"
)

// ShrinkFile is shrink.json, in the run folder `splitbrain shrink` ends
// with: how the run's schedule was shrunk, and how often the smallest one
// breaks the target.
const ShrinkFile = "shrink.json"

// Shrunk is shrink.json.
type Shrunk struct {
	// From is the run folder whose schedule was shrunk.
	From string `json:"from"`
	// Violation is what every kept schedule reproduced: "checker/kind".
	Violation string `json:"violation"`
	// Original and Minimal are the run's schedule and the smallest found,
	// each with its nodes and time limit.
	Original ShrunkSchedule `json:"original"`
	Minimal  ShrunkSchedule `json:"minimal"`
	// Command carries out the minimal schedule again.
	Command string `json:"command"`
	// Likelihood is, for each cut of the minimal schedule after its k-th
	// fault (k from 0), how many of its replays showed the violation.
	Likelihood []Cut `json:"likelihood"`
	// Candidates and Replays count the search's work; Seconds its time.
	Candidates int     `json:"candidates"`
	Replays    int     `json:"replays"`
	Seconds    float64 `json:"seconds"`
	// OutOfBudget: the search stopped at its budget, and a smaller
	// schedule may exist.
	OutOfBudget bool `json:"out_of_budget,omitempty"`
}

// ShrunkSchedule is a schedule with the nodes and time limit it ran with,
// and how many of its replays reproduced the violation.
type ShrunkSchedule struct {
	Faults     []nemesis.Timed `json:"faults"`
	Nodes      int             `json:"nodes"`
	TimeLimit  float64         `json:"time_limit_s"`
	Runs       int             `json:"runs"`
	Reproduced int             `json:"reproduced"`
}

// Cut is the minimal schedule cut after its first After faults, and how
// many of its replays showed the violation.
type Cut struct {
	After  int     `json:"after"`
	At     float64 `json:"at_s"` // when the last fault kept is healed (0: none kept)
	Runs   int     `json:"runs"`
	Failed int     `json:"failed"`
}

// ReadShrunk reads shrink.json of the run folder dir; nil when it has none.
func ReadShrunk(dir string) (*Shrunk, error) {
	b, err := os.ReadFile(filepath.Join(dir, ShrinkFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s Shrunk
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.Join(dir, ShrinkFile), err)
	}
	return &s, nil
}

// Likelihood plot's size, in px.
const (
	likeW, likeH = 320, 140
	likeL, likeB = 40, 24 // room for the axes' labels
)

// likelihoodPlot draws the share of replays that failed at each cut as a
// small SVG: a step up at the fault after which the violation became
// likely.
func likelihoodPlot(cuts []Cut) template.HTML {
	if len(cuts) == 0 {
		return ""
	}
	var s svgb
	s.f(`<svg class="likelihood" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="share of replays that failed, by the fault after which the schedule was cut">`, likeW, likeH, likeW, likeH)
	plotW, plotH := likeW-likeL-10, likeH-likeB-10
	x := func(i int) float64 {
		if len(cuts) == 1 {
			return float64(likeL) + float64(plotW)/2
		}
		return float64(likeL) + float64(i)*float64(plotW)/float64(len(cuts)-1)
	}
	y := func(share float64) float64 { return 10 + (1-share)*float64(plotH) }
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	for _, share := range []float64{0, 0.5, 1} {
		s.f(`<path class="grid" d="M%d %sH%d"/><text class="axis" x="%d" y="%s" text-anchor="end">%.0f%%</text>`,
			likeL, num(y(share)), likeW-10, likeL-4, num(y(share)+4), share*100)
	}
	var pts string
	for i, c := range cuts {
		share := 0.0
		if c.Runs > 0 {
			share = float64(c.Failed) / float64(c.Runs)
		}
		if i > 0 {
			pts += " "
		}
		pts += num(x(i)) + "," + num(y(share))
		label := "none"
		if c.After > 0 {
			label = fmt.Sprintf("after %d (%.1f s)", c.After, c.At)
		}
		s.f(`<circle class="cut" cx="%s" cy="%s" r="4"><title>%s</title></circle>`, num(x(i)), num(y(share)),
			esc(fmt.Sprintf("cut %s: %d of %d replays failed", label, c.Failed, c.Runs)))
		s.f(`<text class="axis" x="%s" y="%d" text-anchor="middle">%d</text>`, num(x(i)), likeH-8, c.After)
	}
	s.f(`<polyline class="likely" points="%s"/>`, pts)
	s.WriteString(`</svg>`)
	return template.HTML(s.String())
}
