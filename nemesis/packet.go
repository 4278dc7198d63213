package nemesis

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Impairment is what a packet fault does to the packets on its links:
// a share lost, a delay with jitter, a bandwidth. The harness carries it
// out without netem (nemesis/netfilter says how).
type Impairment struct {
	LossPercent int
	Delay       time.Duration
	Jitter      time.Duration
	Rate        uint64 // bytes per second
}

// Mechanism is a kernel mechanism packet faults stand on.
type Mechanism string

// The mechanisms, each what the packet filter sidecar's probe reports
// missing: nftables' random numbers (loss), the xt NFQUEUE target through
// nft_compat (delay), the htb qdisc (bandwidth).
const (
	MechNumgen Mechanism = "nftables numgen (CONFIG_NFT_NUMGEN)"
	MechQueue  Mechanism = "the xt NFQUEUE target (CONFIG_NFT_COMPAT, CONFIG_NETFILTER_XT_TARGET_NFQUEUE, CONFIG_NETFILTER_NETLINK_QUEUE)"
	MechShaper Mechanism = "the htb qdisc (CONFIG_NET_SCH_HTB)"
)

// The packet faults' ranges: loss 1-60%, a delay of 5 ms to 2 s with a
// jitter of up to half of it, a bandwidth of 2-64 kB/s; each drawn
// log-uniformly but the loss, so that short delays and a few kB/s come
// as often as long ones and tens.
const (
	minLoss, maxLoss   = 1, 60
	minDelay, maxDelay = 5 * time.Millisecond, 2 * time.Second
	minRate, maxRate   = 2_000, 64_000
)

// logUniform draws from [lo, hi] so that every factor of the range is
// as likely as any other.
func logUniform(rng *rand.Rand, lo, hi float64) float64 {
	return lo * math.Exp(rng.Float64()*math.Log(hi/lo))
}

// packetTargets are the nodes a packet fault hits the links of, one drawn
// per strike: Jepsen's packet nemesis draws among the same.
var packetTargets = []Target{Leader, One, Minority, Majority, All}

// packetFault impairs every link of the nodes of a drawn target, as draw
// says, with the kernel's mechanism needs, and heals by clearing it.
func packetFault(name string, needs Mechanism, draw func(*rand.Rand) (Impairment, string)) Fault {
	return Fault{Name: name, Kind: Packet, Family: "packet", Needs: needs, inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
		nodes := choose(c, packetTargets[rng.IntN(len(packetTargets))], rng)
		how, words := draw(rng)
		links := LinksOf(c, nodes)
		what := fmt.Sprintf("%s on every link of %s", words, strings.Join(nodes, ", "))
		if l := c.Leader(); slices.Contains(nodes, l) {
			what += " (leader " + l + ")"
		}
		a := Applied{
			Nodes: nodes,
			What:  what,
			Heal:  func(ctx context.Context) error { return c.Impair(ctx, nil, Impairment{}) },
		}
		return a, c.Impair(ctx, links, how)
	}}
}

var (
	packetLoss = packetFault("packet-loss", MechNumgen, func(rng *rand.Rand) (Impairment, string) {
		loss := minLoss + rng.IntN(maxLoss-minLoss+1)
		return Impairment{LossPercent: loss}, fmt.Sprintf("%d%% of packets lost", loss)
	})
	packetDelay = packetFault("packet-delay", MechQueue, func(rng *rand.Rand) (Impairment, string) {
		delay := time.Duration(logUniform(rng, float64(minDelay), float64(maxDelay))).Round(time.Millisecond)
		jitter := time.Duration(rng.Int64N(int64(delay)/2 + 1)).Round(time.Millisecond)
		return Impairment{Delay: delay, Jitter: jitter}, fmt.Sprintf("packets delayed %s ± %s", delay, jitter)
	})
	packetSlow = packetFault("packet-slow", MechShaper, func(rng *rand.Rand) (Impairment, string) {
		rate := uint64(logUniform(rng, minRate, maxRate))
		return Impairment{Rate: rate}, fmt.Sprintf("bandwidth %.1f kB/s", float64(rate)/1000)
	})
)

// LinksOf is every link of nodes, as a Grudge read as links: each of
// nodes with every other node, every service member and the resource,
// and each other node with nodes, so that a link between two nodes is
// named by both ends.
func LinksOf(c Cluster, nodes []string) Grudge {
	g := Grudge{}
	everyone := append(append(slices.Clone(c.Nodes()), c.Services()...), GrudgeResource)
	for _, n := range nodes {
		g[n] = Drops{All: slices.DeleteFunc(slices.Clone(everyone), func(o string) bool { return o == n })}
	}
	for _, m := range c.Nodes() {
		if !slices.Contains(nodes, m) {
			g[m] = Drops{All: slices.Clone(nodes)}
		}
	}
	return g
}

// A flap cuts a link and heals it over and over: the leader at the strike
// (a random node when none is known) from every other node, each cut and
// each heal lasting 0.5-15 s, drawn log-uniformly from the fault's aim, so
// that a replay flaps the same. The pacer holds it at least flapLasts.
const (
	minFlap, maxFlap = 500 * time.Millisecond, 15 * time.Second
	flapLasts        = 20 * time.Second
)

// flapPeriod draws one cut's or one heal's length.
func flapPeriod(rng *rand.Rand) time.Duration {
	return time.Duration(logUniform(rng, float64(minFlap), float64(maxFlap))).Round(time.Millisecond)
}

// flapPeriods draws the periods of a flap's first flapLasts, a cut first.
func flapPeriods(rng *rand.Rand) []time.Duration {
	var out []time.Duration
	for sum := time.Duration(0); sum < flapLasts; {
		d := flapPeriod(rng)
		out = append(out, d)
		sum += d
	}
	return out
}

var flap = Fault{Name: "flap", Kind: Partition, Family: "flap", Lasts: flapLasts, inject: func(ctx context.Context, c Cluster, rng *rand.Rand) (Applied, error) {
	node := leaderOr(c, rng)
	cut := IsolateNode(c.Nodes(), node)
	// The periods of the first flapLasts, in words; the later ones are
	// drawn as they come, from the same generator.
	periods := flapPeriods(rng)
	words := make([]string, len(periods))
	for i, d := range periods {
		words[i] = map[bool]string{true: "cut ", false: "healed "}[i%2 == 0] + d.String()
	}
	toggles, stop := toggling(ctx, periods, func(bool) time.Duration { return flapPeriod(rng) }, func(ctx context.Context, on bool) (string, error) {
		if on {
			return node + " cut from every other node, in a flap", c.Partition(ctx, cut)
		}
		return node + "'s links healed, in a flap", c.Partition(ctx, nil)
	})
	a := Applied{
		Nodes:   []string{node},
		What:    fmt.Sprintf("%s flapping, cut from every other node and healed over and over: %s...", node, strings.Join(words, ", ")),
		Toggles: toggles,
		Heal: func(ctx context.Context) error {
			err := stop()
			if herr := c.Partition(ctx, nil); herr != nil {
				return herr
			}
			if err != nil {
				return fmt.Errorf("a flap could not cut or heal: %w", err)
			}
			return nil
		},
	}
	return a, c.Partition(ctx, cut)
}}
