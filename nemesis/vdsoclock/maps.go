package vdsoclock

import (
	"bufio"
	"strconv"
	"strings"
)

// vdsoRange finds the [vdso] mapping in the text of a /proc/PID/maps.
func vdsoRange(maps string) (start, end uint64, ok bool) {
	sc := bufio.NewScanner(strings.NewReader(maps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[5] != "[vdso]" {
			continue
		}
		lo, hi, found := strings.Cut(f[0], "-")
		if !found {
			return 0, 0, false
		}
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || e <= s {
			return 0, 0, false
		}
		return s, e, true
	}
	return 0, 0, false
}
