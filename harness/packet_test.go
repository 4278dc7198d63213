package harness

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPacketFidelity measures each packet mechanism on a real link
// between two containers of a throwaway network: the packet filter's
// TestFidelityInNamespace, in one container's namespace with NET_ADMIN,
// impairs its link to the other, where TestEchoInNamespace answers, and
// measures the share of packets lost, the delay added and the bandwidth.
// Its figures (the lines FIGURE) are in docs/figures.md.
func TestPacketFidelity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	ctx := context.Background()
	d := testDocker(t)
	image := netfilterTestImage(t, d, "fidelity", "TestEchoInNamespace|TestFidelityInNamespace", nil)
	runID, nw := throwawayNetwork(t, d, "test-fidelity")
	near, far := startResource(t, d, runID, nw, "near"), startResource(t, d, runID, nw, "far")
	farIP, err := d.IP(ctx, far.ID, nw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.startBeside(ctx, ContainerSpec{RunID: runID, Name: "echo", Image: image, Beside: far.ID,
		Env: map[string]string{"SPLITBRAIN_FIDELITY_ECHO": "1"}}, nil, false); err != nil {
		t.Fatal(err)
	}
	id, err := d.startBeside(ctx, ContainerSpec{RunID: runID, Name: "measure", Image: image, Beside: near.ID,
		Env: map[string]string{"SPLITBRAIN_FIDELITY_PEER": farIP}}, []string{"NET_ADMIN"}, false)
	if err != nil {
		t.Fatal(err)
	}
	code, out := waitExit(t, d, id, 3*time.Minute)
	t.Logf("%s", out)
	for _, f := range regexp.MustCompile(`FIGURE .*`).FindAll(out, -1) {
		t.Log(string(f))
	}
	if code != 0 || !strings.Contains(string(out), "--- PASS: TestFidelityInNamespace") {
		t.Fatalf("the fidelity test in its namespace exited %d", code)
	}
}
