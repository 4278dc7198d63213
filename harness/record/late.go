package record

import (
	"fmt"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/checkers"
	"github.com/splitbrain/splitbrain/nemesis"
)

// lateAfter: a fault not in effect (or not healed) this long after it was
// begun took effect late. A partition or a pause is in effect within
// milliseconds on an idle machine; seconds mean the host or the Engine
// was struggling, and the fault hit a cluster later than planned.
const lateAfter = time.Second

// lateFaults says, in one note, which faults took effect or were healed
// late. A kill's heal is left out: it starts processes, which takes
// seconds on any machine.
func lateFaults(faults []checkers.FaultEffect) []string {
	var late []string
	for _, f := range faults {
		var parts []string
		if f.InjectMS > float64(lateAfter.Milliseconds()) {
			parts = append(parts, fmt.Sprintf("in effect after %.1f s", f.InjectMS/1000))
		}
		if fault, _ := nemesis.Lookup(f.Fault); !fault.Kind.Restarts() && f.HealMS > float64(lateAfter.Milliseconds()) {
			parts = append(parts, fmt.Sprintf("healed after %.1f s", f.HealMS/1000))
		}
		if len(parts) > 0 {
			late = append(late, fmt.Sprintf("%s at %.1f s (%s)", f.Fault, float64(f.At)/1e9, strings.Join(parts, ", ")))
		}
	}
	if len(late) == 0 {
		return nil
	}
	const shown = 5
	n, more := len(late), ""
	if n > shown {
		more = fmt.Sprintf("; and %d more (see the fault list)", n-shown)
		late = late[:shown]
	}
	return []string{fmt.Sprintf("%d of %d faults took effect or were healed late, more than %s after they were begun, so they hit the cluster later than planned: %s%s",
		n, len(faults), lateAfter, strings.Join(late, "; "), more)}
}
