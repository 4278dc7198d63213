package nemesis

import (
	"context"
	"math/rand/v2"
)

// kill SIGKILLs the leader's container (a random node when none leads) and
// starts it again at heal, with its file system and so its persisted state.
type kill struct{}

func (kill) Name() string { return "kill" }

func (kill) Inject(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
	node, err := pick(c, rng)
	if err != nil {
		return Applied{}, err
	}
	what := "killed " + node
	if node == c.Leader() {
		what += " (the leader)"
	}
	if err := c.Kill(ctx, node); err != nil {
		return Applied{Nodes: []string{node}}, err
	}
	return Applied{
		Nodes: []string{node},
		What:  what,
		Heal:  func(ctx context.Context) error { return c.Restart(ctx, node) },
	}, nil
}
