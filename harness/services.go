package harness

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/internal/parallel"
	"github.com/splitbrain/splitbrain/targets"
)

// A target's services (its etcd, its Redis, its Sentinels) start with the
// run, member by member, and are broken by the service faults.

// When service members start (startServices): a member of its own
// before the nodes or after them, as its service says; one beside a node
// with start: before-nodes needs its node's container to join, so it
// starts once the nodes' containers run, before they are healthy.
const (
	beforeNodes = iota
	withNodes
	afterNodes
)

// moment is when member m of service s starts.
func moment(s targets.Service, m targets.Member) int {
	switch {
	case s.Start == targets.StartAfterNodes:
		return afterNodes
	case m.Node != "":
		return withNodes
	}
	return beforeNodes
}

// startServices starts the members of the target's services that start
// at moment at, all at once, and waits until each is ready.
func (r *run) startServices(ctx context.Context, at int) error {
	c := r.cluster
	type member struct {
		targets.Member
		service targets.Service
	}
	var members []member
	for _, s := range r.manifest.Services {
		for _, m := range s.Placed(r.cfg.Nodes) {
			if moment(s, m) == at {
				members = append(members, member{m, s})
			}
		}
	}
	errs := parallel.Do(members, func(m member) error {
		spec := ContainerSpec{
			RunID: r.info.ID, Name: m.Name, Image: ServiceImage(r.manifest, m.service), Network: c.network, Env: r.memberEnv(m.service, m.Name),
			IP: c.hosts[m.Name], Hosts: c.hosts, Beside: c.ids[m.Node],
		}
		if m.service.Clock == targets.ClockFaketime {
			spec.Binds, spec.Files = r.clockBinds(m.Name, true), r.clockFiles(true)
		}
		spec, err := r.underDiskIf(ctx, spec, m.service.Data, true)
		if err != nil {
			return err
		}
		id, err := c.start(ctx, spec)
		if err != nil {
			return err
		}
		if m.service.Clock == targets.ClockProcess && r.clockSidecars(true) {
			if err := r.startClockSidecar(ctx, m.Name, id); err != nil {
				return err
			}
		}
		if m.Node == "" && r.filtersServices() {
			if err := r.startPacketFilter(ctx, m.Name, id); err != nil {
				return err
			}
			if err := c.waitSidecars(ctx, []string{m.Name}, r.cfg.StartTimeout); err != nil {
				return fmt.Errorf("packet-filter sidecar: %v", err)
			}
		}
		return c.waitService(ctx, m.Name, id, m.service, r.cfg.StartTimeout)
	})
	for i, err := range errs {
		switch {
		case IsBadInput(err): // a clock sidecar that cannot ptrace: the member is not to blame
			return err
		case err != nil:
			return r.withLog(ctx, members[i].Name, fmt.Errorf("service %s: %v", members[i].Name, err))
		}
	}
	return nil
}

// skewableServices are the service containers whose clocks the
// clock-service fault may skew.
func skewableServices(m targets.Manifest, nodes int) []string {
	var out []string
	for _, s := range m.Services {
		if s.Clock != "" {
			out = append(out, s.MemberNames(nodes)...)
		}
	}
	return out
}

// memberEnv is a service member's environment: the manifest's, its own
// name, every member of its service, the nodes, the run's secret, and with clock: faketime
// libfaketime's.
func (r *run) memberEnv(s targets.Service, name string) map[string]string {
	env := maps.Clone(s.Env)
	if env == nil {
		env = map[string]string{}
	}
	var members, nodes []string
	for _, m := range s.MemberNames(r.cfg.Nodes) {
		members = append(members, fmt.Sprintf("%s:%d", m, s.Port))
	}
	for _, n := range r.cluster.nodes {
		nodes = append(nodes, fmt.Sprintf("%s:%d", n, r.manifest.Port))
	}
	env[contract.EnvMember] = name
	env[contract.EnvMembers] = strings.Join(members, ",")
	env[contract.EnvNodes] = strings.Join(nodes, ",")
	env[contract.EnvSecret] = r.secret
	if s.Clock == targets.ClockFaketime {
		maps.Copy(env, faketimeEnv())
	}
	return env
}
