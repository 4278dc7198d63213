package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// cluster is the running system under test as the workload and the nemesis
// see it: node names, their current addresses, and the Docker handles
// behind them.
type cluster struct {
	docker  *Docker
	network string
	port    int
	leader  func() string // the observer's view, set once it runs

	mu          sync.RWMutex
	nodes       []string
	ids         map[string]string // node -> container id
	urls        map[string]string // node -> node API base URL
	resourceURL string
}

func (c *cluster) Nodes() []string { return c.nodes }

func (c *cluster) NodeURL(node string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.urls[node]
}

func (c *cluster) ResourceURL() string { return c.resourceURL }

func (c *cluster) Leader() string {
	if c.leader == nil {
		return ""
	}
	return c.leader()
}

func (c *cluster) Kill(ctx context.Context, node string) error {
	return c.docker.Kill(ctx, c.ids[node])
}

// Restart starts a killed node again and learns its address anew.
func (c *cluster) Restart(ctx context.Context, node string) error {
	if err := c.docker.Restart(ctx, c.ids[node]); err != nil {
		return err
	}
	return c.learnAddress(ctx, node)
}

func (c *cluster) learnAddress(ctx context.Context, node string) error {
	ip, err := c.docker.IP(ctx, c.ids[node], c.network)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.urls[node] = fmt.Sprintf("http://%s:%d", ip, c.port)
	c.mu.Unlock()
	return nil
}

// waitHealthy polls GET /health on every node until all answer 200 or the
// deadline passes; then it names the nodes that never did.
func (c *cluster) waitHealthy(ctx context.Context, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: 500 * time.Millisecond}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		pending []string
	)
	for _, node := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				resp, err := hc.Get(c.NodeURL(node) + "/health")
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						return
					}
				}
				select {
				case <-ctx.Done():
					mu.Lock()
					pending = append(pending, node)
					mu.Unlock()
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
	if len(pending) > 0 {
		if errors.Is(ctx.Err(), context.Canceled) {
			return pending, ctx.Err()
		}
		return pending, fmt.Errorf("%s never became healthy within %s", strings.Join(pending, ", "), timeout)
	}
	return nil, nil
}
