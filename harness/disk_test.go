package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/splitbrain/splitbrain/nemesis"
)

// writer is a node of the disk-writer fixture, which writes and reads
// files under its data directory as asked.
type writer struct {
	t    *testing.T
	c    *cluster
	node string
}

// put writes body to file name, synced or not, and says what the node
// answered: "" for a write that returned, else its error.
func (w writer) put(name, body string, sync bool) string {
	w.t.Helper()
	url := w.c.NodeURL(w.node) + "/files/" + name
	if sync {
		url += "?sync=1"
	}
	return w.do(url, body)
}

// save saves body as the SDK's file store does, synced or not.
func (w writer) save(name, body string, sync bool) string {
	w.t.Helper()
	url := w.c.NodeURL(w.node) + "/store/" + name
	if !sync {
		url += "?sync=0"
	}
	return w.do(url, body)
}

func (w writer) do(url, body string) string {
	w.t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, strings.NewReader(body))
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		w.t.Fatalf("put %s: %v", url, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusOK {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// get reads file name; a file that does not exist reads as "missing".
func (w writer) get(name string) string {
	w.t.Helper()
	res, err := (&http.Client{Timeout: 5 * time.Second}).Get(w.c.NodeURL(w.node) + "/files/" + name)
	if err != nil {
		w.t.Fatalf("get %s: %v", name, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return "missing"
	}
	return string(b)
}

// restart starts the node again after a kill or a power cut, and waits
// until it answers.
func (w writer) restart() {
	w.t.Helper()
	ctx := context.Background()
	if err := w.c.Restart(ctx, w.node); err != nil {
		w.t.Fatal(err)
	}
	if err := w.c.WaitHealthy(ctx, w.node); err != nil {
		w.t.Fatal(err)
	}
}

// The layer loses a write exactly when it was not synced, and only at a
// power cut: a kill keeps every write, as the kernel's page cache does
// for a crashed process; a power cut leaves each file as its last fsync
// left it, and a file never synced empty.
func TestPowerCutLosesExactlyTheUnsyncedWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startTestClusterFor(t, "testdata/disk-writer", "disk-lose-unsynced-one")
	w := writer{t, c, "n1"}
	for _, step := range []struct{ name, body string }{{"kept", "synced"}, {"crash", "written"}} {
		if err := w.put(step.name, step.body, step.name == "kept"); err != "" {
			t.Fatal(err)
		}
	}
	if err := c.Kill(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	w.restart()
	if got := w.get("crash"); got != "written" {
		t.Fatalf("after a kill the unsynced write reads %q, want it kept", got)
	}
	w.put("kept", "overwritten, unsynced", false)
	w.put("lost", "never synced", false)
	// The SDK's store, each save a new file renamed over the last: the
	// synced one keeps its last value, the unsynced one loses it.
	for i := range 3 {
		w.save("vote", fmt.Sprint("term ", i), true)
		w.save("forgotten", fmt.Sprint("term ", i), false)
	}
	if err := c.PowerCut(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	w.restart()
	for name, want := range map[string]string{"kept": "synced", "lost": "", "crash": "written", "vote": `"term 2"`, "forgotten": ""} {
		if got := w.get(name); got != want {
			t.Errorf("after the power cut %s reads %q, want %q", name, got, want)
		}
	}
}

// A stalled disk holds a write until it is healed, while reads go on; a
// failing one fails it at once with its error; healed, it writes again.
func TestDiskStallsAndFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := startTestClusterFor(t, "testdata/disk-writer", "disk-stall-one", "disk-fail-one")
	w := writer{t, c, "n2"}
	if err := w.put("before", "x", true); err != "" {
		t.Fatal(err)
	}
	if err := c.SetDisk(ctx, "n2", nemesis.Disk{Stall: true}); err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { done <- w.put("during", "y", true) }()
	select {
	case err := <-done:
		t.Fatalf("a write returned through a stalled disk: %q", err)
	case <-time.After(time.Second):
	}
	if got := w.get("before"); got != "x" {
		t.Errorf("a read while stalled: %q", got)
	}
	if err := c.SetDisk(ctx, "n2", nemesis.Disk{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != "" {
			t.Fatalf("the held write failed once healed: %s", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held write did not return once healed")
	}
	for errno, says := range map[string]string{nemesis.DiskIO: "input/output error", nemesis.DiskFull: "no space left on device"} {
		if err := c.SetDisk(ctx, "n2", nemesis.Disk{Fail: errno}); err != nil {
			t.Fatal(err)
		}
		if err := w.put("failing", "z", true); !strings.Contains(err, says) {
			t.Errorf("a write on a disk failing with %s: %q", errno, err)
		}
	}
	if err := c.SetDisk(ctx, "n2", nemesis.Disk{}); err != nil {
		t.Fatal(err)
	}
	if err := w.put("after", "ok", true); err != "" || w.get("after") != "ok" {
		t.Errorf("healed: %q", err)
	}

	// Killed with a write held by the stall: the node's process, in the
	// kernel waiting for the layer's answer, dies with it, and the node
	// starts again (a program that kept the layer's /dev/fuse open would
	// wait for good, in a container no kill could end).
	if err := c.SetDisk(ctx, "n2", nemesis.Disk{Stall: true}); err != nil {
		t.Fatal(err)
	}
	go func() { // it fails when the node dies, as it should
		req, _ := http.NewRequest(http.MethodPut, c.NodeURL("n2")+"/files/held?sync=1", strings.NewReader("held"))
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	time.Sleep(500 * time.Millisecond)
	if err := c.Kill(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	w.restart()
}

// The layer's cost on a write of 4 KiB and its fsync, over and over, in
// one node of a cluster that may stall disks (the layer passes writes
// through) and of one that may cut power (it records each for undo),
// against the same loop in a folder of the same container beside the
// layer (docs/figures.md, Disk faults):
//
//	go test -run '^$' -bench DiskLayer -benchtime 2000x ./harness/
func BenchmarkDiskLayer(b *testing.B) {
	for _, bc := range []struct{ name, fault, dir string }{
		{"direct", "disk-stall-one", "/bench"},
		{"layer", "disk-stall-one", "/data"},
		{"layer-undo", "disk-lose-unsynced-one", "/data"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := startTestClusterFor(b, "testdata/disk-writer", bc.fault)
			url := fmt.Sprintf("%s/loop?dir=%s&n=%d&size=4096", c.NodeURL("n1"), bc.dir, b.N)
			b.ResetTimer()
			res, err := http.Post(url, "", nil)
			if err != nil {
				b.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			b.StopTimer()
			var ns float64
			if _, err := fmt.Sscan(string(body), &ns); err != nil {
				b.Fatalf("%s: %s", res.Status, body)
			}
			b.ReportMetric(ns/float64(b.N)/1e3, "µs/write+fsync")
		})
	}
}
