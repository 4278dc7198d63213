package harness

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/splitbrain/splitbrain/harness/engines"
	"github.com/splitbrain/splitbrain/targets"
)

// Three engines in containers of this one become a swarm, which refuses
// an engine already in a swarm of its own until it leaves; an image
// built here is shipped to the engines that lack it; a container on one
// engine reaches one on another by name over the run's overlay; and
// nothing is left on any engine after.
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
	debian := debianBaseTag(targets.DefaultDebianRelease)
	if err := e.Ship(ctx, d, resourceImage, gatewayImage, debian); err != nil {
		t.Fatal(err)
	}

	// The resource on e1; from e2, a shell asks it for its health by name.
	e1 := e.Engine("e1")
	res, err := e1.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: "splitbrain-" + runID + "-resource",
		Config: &container.Config{Image: resourceImage, Labels: runLabels(runID, "resource"),
			Env: []string{"SPLITBRAIN_RESOURCE_MODE=strict", "SPLITBRAIN_RESOURCE_ADDR=:" + strconv.Itoa(resourcePort), "SPLITBRAIN_RESOURCE_LOG=/dev/null"}},
		HostConfig: &container.HostConfig{NetworkMode: container.NetworkMode(overlay)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e1.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	// Every container of a run knows the others by their fixed addresses
	// (addressPlan), not by the engines' DNS, which spreads names over
	// the swarm by gossip.
	ip, err := e1.IP(ctx, res.ID, overlay)
	if err != nil {
		t.Fatal(err)
	}
	ask := fmt.Sprintf(`for i in $(seq 20); do timeout 2 bash -c "exec 3<>/dev/tcp/%[1]s/%[2]d" && break; sleep 0.2; done; exec 3<>/dev/tcp/%[1]s/%[2]d; printf 'GET /health HTTP/1.0\r\n\r\n' >&3; head -1 <&3`, ip, resourcePort)
	code, out, err := e.Engine("e2").runToEnd(ctx, runID, "asker", time.Minute,
		&container.Config{Image: debian, Cmd: []string{"bash", "-c", ask}},
		&container.HostConfig{NetworkMode: container.NetworkMode(overlay)})
	if err != nil || code != 0 || !strings.Contains(string(out), "200") {
		for _, en := range f.Engines {
			logs, _ := d.cli.ContainerLogs(ctx, "splitbrain-"+runID+"-"+en.Name, client.ContainerLogsOptions{ShowStderr: true, ShowStdout: true})
			if logs != nil {
				b, _ := io.ReadAll(logs)
				t.Logf("engine %s:\n%s", en.Name, tail(b, 40))
			}
		}
		t.Fatalf("from e2, the resource on e1 at %s answered %d %q (%v), want 200", ip, code, tail(out, 3), err)
	}

	// From here, through the gateway, as the controller reaches nodes.
	dialer, err := e.StartGateway(ctx, runID, overlay, subnet)
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
		t.Fatalf("from here through the gateway %s, the resource at %s answered %v", dialer.Proxy, ip, err)
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
