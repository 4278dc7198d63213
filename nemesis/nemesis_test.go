package nemesis

import (
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	groups, err := Expand([]string{"kill", " none", "", "pause-majority", "partition-ring"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range groups {
		var names []string
		for _, f := range g {
			names = append(names, f.Name)
		}
		got = append(got, strings.Join(names, "+"))
	}
	if s := strings.Join(got, ","); s != "kill-leader+kill-minority,pause-majority,partition-ring" {
		t.Errorf("expanded to %s", s)
	}
	if fs, err := Expand([]string{"none"}); err != nil || len(fs) != 0 {
		t.Errorf("none: %v, %v", fs, err)
	}
	if _, err := Expand([]string{"meteor"}); err == nil || !strings.Contains(err.Error(), "partition") {
		t.Errorf("unknown nemesis: %v", err)
	}
	if _, err := Expand([]string{"packet"}); err == nil || !strings.Contains(err.Error(), "netem") {
		t.Errorf("packet faults: %v", err)
	}
}

func TestEveryFamilyMemberExists(t *testing.T) {
	for fam, names := range families {
		for _, n := range names {
			if _, ok := catalogue[n]; !ok && !strings.HasPrefix(n, "packet-") {
				t.Errorf("family %s names unknown fault %s", fam, n)
			}
		}
	}
}
