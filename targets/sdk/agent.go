package sdk

import (
	"errors"
	"log"
)

// Agent runs a node whose elector the target drives itself, where Node
// drives a state machine: an agent beside a real server (an etcd member, a
// redis-server) that serves the node API from the server's own state, or
// an elector that is a client of the target's services (a lease, etcd's
// election recipe).
type Agent struct {
	Env Env
	// Server is the command line of the real server the agent runs beside
	// as its child (StartServer), or empty for none. It starts first, and
	// the agent ends when it exits (Supervise), even while Ready waits.
	Server []string
	// Elector is the node's belief. The node API serves its Resign and
	// its WriteLocal too when it has them (Resigner, LocalWriter).
	Elector Elector
	// Ready, if set, returns once the elector can answer (its server
	// answers, its cluster has a leader): the node API, and so the node's
	// health, waits for it.
	Ready func()
	// Loop, if set, is the elector's own work, a round each interval: it
	// runs on a goroutine of its own once Ready has returned.
	Loop func()
	// Polled serves no watch (the server option Polled): for an elector
	// whose belief costs a question to its server.
	Polled bool
}

// Run starts the agent's server, waits until the agent is Ready, starts
// its Loop and serves the node API until the process ends.
func (a *Agent) Run() error {
	srv, err := a.start()
	if err != nil {
		return err
	}
	return srv.ListenAndServe()
}

// start is Run up to serving: it returns the node API server.
func (a *Agent) start() (*Server, error) {
	switch {
	case a.Elector == nil:
		return nil, errors.New("sdk: Agent without an Elector")
	case len(a.Server) > 0 && a.Server[0] == "":
		return nil, errors.New("sdk: Agent.Server names no program")
	}
	if len(a.Server) > 0 {
		p, err := StartServer(a.Server[0], a.Server[1:]...)
		if err != nil {
			return nil, err
		}
		p.Supervise()
	}
	if a.Ready != nil {
		a.Ready()
	}
	if a.Loop != nil {
		go a.Loop()
	}
	var opts []Option
	if a.Polled {
		opts = append(opts, Polled())
	}
	return NewServer(a.Env, a.Elector, opts...), nil
}

// AgentMain is Main for an Agent: the main function of a Go target that
// drives its elector itself. It reads the harness's environment, has
// build make the Agent from it (reading the target's own settings from s;
// a build that acts, writing a file or starting a client, checks s.Err
// first), and runs it. A bad setting or a failed start ends the process
// with one line on its log.
func AgentMain(build func(env Env, s *Settings) (*Agent, error)) {
	env, a := setUp(build)
	a.Env = env
	log.Fatal(a.Run())
}
