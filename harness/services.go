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

// startServices starts the members of the target's services that start
// at this phase, all at once, and waits until each is ready.
func (r *run) startServices(ctx context.Context, phase string) error {
	c := r.cluster
	type member struct {
		name    string
		service targets.Service
	}
	var members []member
	for _, s := range r.manifest.Services {
		if s.Start == phase {
			for _, name := range s.MemberNames() {
				members = append(members, member{name, s})
			}
		}
	}
	errs := parallel.Do(members, func(m member) error {
		spec := ContainerSpec{
			RunID: r.info.ID, Name: m.name, Image: r.serviceImage(m.service), Network: c.network, Env: r.memberEnv(m.service, m.name),
			IP: c.hosts[m.name], Hosts: c.hosts,
		}
		if m.service.Clock == targets.ClockFaketime {
			spec.Binds = r.clockBinds(m.name, true)
		}
		id, err := c.start(ctx, spec)
		if err != nil {
			return err
		}
		return c.waitService(ctx, m.name, id, m.service, r.cfg.StartTimeout)
	})
	for i, err := range errs {
		if err != nil {
			return r.withLog(ctx, members[i].name, fmt.Errorf("service %s: %v", members[i].name, err))
		}
	}
	return nil
}

// skewableServices are the service containers whose clocks the
// clock-service fault may skew.
func skewableServices(m targets.Manifest) []string {
	var out []string
	for _, s := range m.Services {
		if s.Clock == targets.ClockFaketime {
			out = append(out, s.MemberNames()...)
		}
	}
	return out
}

// memberEnv is a service member's environment: the manifest's, its own
// name, every member of its service, the nodes, and with clock: faketime
// libfaketime's.
func (r *run) memberEnv(s targets.Service, name string) map[string]string {
	env := maps.Clone(s.Env)
	if env == nil {
		env = map[string]string{}
	}
	var members, nodes []string
	for _, m := range s.MemberNames() {
		members = append(members, fmt.Sprintf("%s:%d", m, s.Port))
	}
	for _, n := range r.cluster.nodes {
		nodes = append(nodes, fmt.Sprintf("%s:%d", n, r.manifest.Port))
	}
	env[contract.EnvMember] = name
	env[contract.EnvMembers] = strings.Join(members, ",")
	env[contract.EnvNodes] = strings.Join(nodes, ",")
	if s.Clock == targets.ClockFaketime {
		maps.Copy(env, faketimeEnv())
	}
	return env
}
