package sdk

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/contract"
)

func TestSkewApply(t *testing.T) {
	base := time.Unix(1000, 0)
	cases := []struct {
		skew contract.Skew
		at   time.Time
		want time.Time
	}{
		{contract.Skew{}, base, base},
		{contract.Skew{Offset: 5 * time.Second}, base, base.Add(5 * time.Second)},
		{contract.Skew{Offset: -time.Minute}, base, base.Add(-time.Minute)},
		// twice as fast since base: 10 s later it reads 20 s later
		{contract.Skew{Rate: 2, Since: base.UnixNano()}, base.Add(10 * time.Second), base.Add(20 * time.Second)},
		{contract.Skew{Rate: 0.5, Since: base.UnixNano()}, base.Add(10 * time.Second), base.Add(5 * time.Second)},
	}
	for _, c := range cases {
		if got := c.skew.Apply(c.at); !got.Equal(c.want) {
			t.Errorf("%+v.Apply(%v) = %v, want %v", c.skew, c.at, got, c.want)
		}
	}
}

func TestClockFollowsItsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock.json")
	c := NewClock(path)
	if d := time.Until(c.Now()); d > time.Second || d < -time.Second {
		t.Fatalf("no file: skewed by %v", d)
	}
	if err := os.WriteFile(path, []byte(`{"offset_ns": 3600000000000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * clockRecheck)
	if d := time.Until(c.Now()); d < 59*time.Minute {
		t.Errorf("an hour's offset read as %v", d)
	}
	// Replaced by a link over several engines, the file is gone for a
	// moment: the skew stays until new content comes.
	os.Remove(path)
	time.Sleep(2 * clockRecheck)
	if d := time.Until(c.Now()); d < 59*time.Minute {
		t.Errorf("a file gone for a moment reset the skew: %v", d)
	}
	if err := os.WriteFile(path, []byte(`{"offset_ns": 0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * clockRecheck)
	if d := time.Until(c.Now()); d > time.Second {
		t.Errorf("healed clock still skews by %v", d)
	}
}
