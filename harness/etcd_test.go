package harness_test

import (
	"strings"
	"testing"

	"github.com/splitbrain/splitbrain/harness"
	"github.com/splitbrain/splitbrain/harness/harnesstest"
	"github.com/splitbrain/splitbrain/harness/record"
)

// A release of etcd that was never made is the user's to fix: one line
// naming it, before anything starts.
func TestEtcdUnknownRelease(t *testing.T) {
	cfg := testConfig(t)
	cfg.TargetDir = "testdata/etcd-unknown-release"
	out, err := record.Run(harnesstest.Context(t), cfg)
	if !harness.IsBadInput(err) || !strings.Contains(err.Error(), "etcd v3.6.999") {
		t.Fatalf("want bad input naming etcd v3.6.999, got %v", err)
	}
	harnesstest.NothingLeft(t, out.Info.ID)
}
