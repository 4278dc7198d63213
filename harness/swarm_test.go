package harness

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/harness/engines"
)

// Three engines in containers of this one become a swarm, which refuses
// an engine already in a swarm of its own until it leaves; images built
// here are shipped to the engines that need them; the resource on one
// engine answers this test through the gateway on another, over the
// run's overlay; and nothing is left on any engine after, nor the swarm.
func TestEnginesInContainersJoinASwarm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three Docker Engines in containers")
	}
	t.Parallel()
	ctx := context.Background()
	d := testDocker(t)
	runID := "swarm-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	t.Cleanup(func() { d.Remove(context.Background(), LabelRun+"="+runID) })
	f, err := d.StartEngines(ctx, runID, 3)
	if err != nil {
		t.Fatal(err)
	}
	e, err := ConnectEngines(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	// e3 in a swarm of its own: refused, by name, until it leaves it.
	e3 := e.Engine("e3")
	if _, err := e3.cli.SwarmInit(ctx, client.SwarmInitOptions{ListenAddr: "0.0.0.0:2377", AdvertiseAddr: f.Engines[2].AdvertiseAddr()}); err != nil {
		t.Fatal(err)
	}
	if err := e.Join(ctx); err == nil || !strings.HasPrefix(err.Error(), "engine e3: in another swarm than engine e1's") {
		t.Fatalf("joining with e3 in a swarm of its own: %v", err)
	}
	if _, err := e3.cli.SwarmLeave(ctx, client.SwarmLeaveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.Join(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Join(ctx); err != nil {
		t.Fatalf("joining again, the engines already in the swarm: %v", err)
	}
	nodes, err := e.Engine("e1").cli.NodeList(ctx, client.NodeListOptions{})
	if err != nil || len(nodes.Items) != 3 {
		t.Fatalf("the swarm has %d nodes (%v), want 3", len(nodes.Items), err)
	}

	overlay, subnet, err := e.NewOverlay(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("overlay %s on %s", overlay, subnet)
	for _, img := range []struct{ tag, main string }{{resourceImage, resourceMain}, {gatewayImage, gatewayMain}} {
		if err := d.BuildGoImage(ctx, img.tag, "..", img.main); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Ship(ctx, d, map[string][]string{"e1": {gatewayImage}, "e2": {resourceImage}}); err != nil {
		t.Fatal(err)
	}

	// The resource on e2, reached from here through the gateway on e1, as
	// the controller reaches nodes: across the engines, by the overlay.
	e2 := e.Engine("e2")
	res, err := e2.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: "splitbrain-" + runID + "-resource",
		Config: &container.Config{Image: resourceImage, Labels: runLabels(runID, "resource"),
			Env: []string{"SPLITBRAIN_RESOURCE_MODE=strict", "SPLITBRAIN_RESOURCE_ADDR=:" + strconv.Itoa(resourcePort), "SPLITBRAIN_RESOURCE_LOG=/dev/null"}},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(overlay)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e2.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	// Every container of a run knows the others by their fixed addresses
	// (addressPlan), not by the engines' DNS, which spreads names over
	// the swarm by gossip.
	ip, err := e2.IP(ctx, res.ID, overlay)
	if err != nil {
		t.Fatal(err)
	}
	dialer, err := e.StartGateway(ctx, "e1", runID, overlay, subnet)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}, Timeout: 5 * time.Second}
	var answer *http.Response
	for range 25 { // the published port may open a moment after the start
		if answer, err = hc.Get("http://" + net.JoinHostPort(ip, strconv.Itoa(resourcePort)) + "/health"); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil || answer.StatusCode != http.StatusOK {
		for _, en := range f.Engines {
			logs, _ := d.Logs(ctx, "splitbrain-"+runID+"-"+en.Name)
			t.Logf("engine %s:\n%s", en.Name, tail(logs, 20))
		}
		t.Fatalf("from here through the gateway %s on e1, the resource on e2 at %s answered %v", dialer.Proxy, ip, err)
	}
	answer.Body.Close()

	removed, err := e.Remove(ctx, LabelRun+"="+runID)
	if err != nil || removed.Containers != 2 || removed.Networks != 1 {
		t.Fatalf("removed %+v (%v), want the resource, the gateway and the overlay", removed, err)
	}
	for _, en := range f.Engines {
		left, err := e.Engine(en.Name).cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelManaged)})
		if err != nil || len(left.Items) != 0 {
			t.Errorf("engine %s keeps %d containers of ours (%v)", en.Name, len(left.Items), err)
		}
	}
	if err := e.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for _, en := range f.Engines {
		if info, err := e.Engine(en.Name).swarmInfo(ctx); err != nil || info.LocalNodeState != "inactive" {
			t.Errorf("engine %s after Leave: %s (%v), want in no swarm", en.Name, info.LocalNodeState, err)
		}
	}
}

// An engine that does not answer is named, in one line, before anything
// is started.
func TestEngineThatDoesNotAnswerIsNamed(t *testing.T) {
	f := engines.File{MTU: engines.DefaultMTU, Engines: []engines.Engine{{Name: "gone", Host: "tcp://127.0.0.1:1"}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := ConnectEngines(ctx, f)
	if err == nil || !strings.HasPrefix(err.Error(), "engine gone: cannot reach the Docker Engine at tcp://127.0.0.1:1") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("%v", err)
	}
}
