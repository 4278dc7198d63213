// Package zookeeper configures ZooKeeper servers on a run's network, starts them on the JVM and reads a server's own word on whether it leads.
package zookeeper

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/splitbrain/splitbrain/contract"
	"github.com/splitbrain/splitbrain/targets/sdk"
)

// The ports of every server, on its own host name.
const (
	ClientPort   = 2181
	QuorumPort   = 2888
	ElectionPort = 3888
)

// Where a server keeps its configuration and its data: in the container's
// own filesystem, which a kill keeps and a restart finds.
const (
	ConfigFile = "/data/zoo.cfg"
	DataDir    = "/data/zookeeper"
)

// Settings are the knobs of an ensemble that a manifest may turn, each an
// environment variable of its nodes or members.
type Settings struct {
	// TickTime is ZooKeeper's unit of time (ZK_TICK_TIME). ZooKeeper's
	// sample configuration has 2 s; 200 ms scales every timeout down by
	// ten, so that a 60 s run sees several failovers.
	TickTime time.Duration
	// InitLimit is how many ticks a follower has to connect to a new
	// leader and sync with it (ZK_INIT_LIMIT).
	InitLimit int
	// SyncLimit is how many ticks a follower may fall behind, and how long
	// a leader waits for a quorum's acknowledgements before it steps down
	// (ZK_SYNC_LIMIT).
	SyncLimit int
	// Heap is the JVM's largest heap (ZK_HEAP, as java's -Xmx takes it).
	Heap string
	// Extra are zoo.cfg lines of the manifest's own (ZK_CONFIG_EXTRA),
	// written last, so that a key given there wins over the one above.
	Extra string
}

// ReadSettings reads the ensemble's settings from the environment, with
// defaults.
func ReadSettings(s *sdk.Settings) Settings {
	return Settings{
		TickTime:  s.Duration("ZK_TICK_TIME", 200*time.Millisecond),
		InitLimit: s.Int("ZK_INIT_LIMIT", 20),
		SyncLimit: s.Int("ZK_SYNC_LIMIT", 5),
		Heap:      s.String("ZK_HEAP", "192m"),
		Extra:     s.String("ZK_CONFIG_EXTRA", ""),
	}
}

// ID is a server's myid: the number its name ends in (zk3, n3: 3), which
// the harness gives every member and node, so that a server keeps its id
// across restarts and every server derives the same ids.
func ID(name string) (int, error) {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	id, err := strconv.Atoi(name[i:])
	if err != nil || id < 1 || id > 255 {
		return 0, fmt.Errorf("server name %q does not end in a number from 1 to 255, which would be its myid", name)
	}
	return id, nil
}

// Config is the zoo.cfg of a server of an ensemble of servers (host
// names, each ending in its id).
func Config(servers []string, s Settings) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", s.TickTime.Milliseconds())
	fmt.Fprintf(&b, "initLimit=%d\nsyncLimit=%d\n", s.InitLimit, s.SyncLimit)
	fmt.Fprintf(&b, "dataDir=%s\nclientPort=%d\n", DataDir, ClientPort)
	// The agents and the ready check ask srvr; the others help a person
	// reading a run's container.
	b.WriteString("4lw.commands.whitelist=srvr,stat,mntr,ruok,conf\n")
	// Nothing asks the admin server, and its port is one more to keep.
	b.WriteString("admin.enableServer=false\n")
	// A server binds its quorum and election ports on every interface,
	// not on the address its own name resolves to at the moment it starts.
	b.WriteString("quorumListenOnAllIPs=true\n")
	for _, host := range servers {
		id, err := ID(host)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "server.%d=%s:%d:%d\n", id, host, QuorumPort, ElectionPort)
	}
	if s.Extra != "" {
		b.WriteString(strings.TrimSpace(s.Extra) + "\n")
	}
	return b.String(), nil
}

// Command is the command line that runs the server whose configuration is
// at ConfigFile: QuorumPeerMain of Debian's ZooKeeper on the JVM.
func Command(s Settings) []string {
	return []string{
		"java",
		// Many JVMs share two cores in a run: the serial collector and a
		// small heap keep each one's start and footprint small.
		"-XX:+UseSerialGC", "-Xms32m", "-Xmx" + s.Heap,
		"-XX:TieredStopAtLevel=1",
		// A first start has no snapshot, which 3.8 refuses without this.
		"-Dzookeeper.snapshot.trust.empty=true",
		// ZooKeeper's election backs off to a notification every 60 s when
		// it hears no one (a server cut off). Scaled down by ten with the
		// tick, as every other timeout here, a server cut off and healed
		// joins an election within 6 s.
		"-Dzookeeper.fastleader.maxNotificationInterval=6000",
		// A connection to a peer that does not answer (cut off, frozen)
		// holds up an election round this long: 5 s by default.
		"-Dzookeeper.cnxTimeout=1000",
		// Every log line with the server's wall clock, to the millisecond:
		// a clock fault shows in the log.
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSXXX",
		// A line for every srvr the agent asks would drown the rest.
		"-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.server.NIOServerCnxn=warn",
		"-cp", "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar",
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", ConfigFile,
	}
}

// Status is a server's answer to srvr.
type Status struct {
	// Mode is "leader", "follower", "observer" or "standalone"; empty
	// while the server serves no requests (it is looking for a leader, or
	// it has lost its quorum).
	Mode string
	// Zxid is the last transaction id the server has issued or seen: its
	// high 32 bits are the epoch of the leader that issued it.
	Zxid uint64
}

// Epoch is the epoch of s's zxid: a leader sets it to its own epoch as it
// starts to lead, before it serves anything.
func (s Status) Epoch() uint64 { return s.Zxid >> 32 }

// notServing is what srvr answers while the server has no quorum.
const notServing = "not currently serving requests"

// ParseSrvr reads a Status out of an answer to srvr.
func ParseSrvr(answer string) (Status, error) {
	if strings.Contains(answer, notServing) {
		return Status{}, nil
	}
	var st Status
	var zxid bool
	sc := bufio.NewScanner(strings.NewReader(answer))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Mode":
			st.Mode = v
		case "Zxid":
			n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
			if err != nil {
				return Status{}, fmt.Errorf("srvr: zxid %q: %v", v, err)
			}
			st.Zxid, zxid = n, true
		}
	}
	if st.Mode == "" || !zxid {
		return Status{}, fmt.Errorf("srvr: no mode and zxid in %q", answer)
	}
	return st, nil
}

// Ask sends the four-letter word cmd to the server at addr and returns
// its whole answer, within timeout.
func Ask(addr, cmd string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	answer, err := io.ReadAll(conn)
	if err != nil {
		return "", err
	}
	if len(answer) == 0 {
		return "", errors.New(cmd + ": empty answer")
	}
	return string(answer), nil
}

// Serving says whether st is a server of an ensemble with a quorum.
func (s Status) Serving() bool { return s.Mode != "" }

// Belief is a node's belief from its server's srvr: it leads when its
// server says "Mode: leader", with the epoch as its token. ZAB gives each
// established leader an epoch of its own, above every epoch a quorum
// accepted before it; a server says leader only once a quorum has
// followed it into that epoch, and stops the moment it steps down.
func Belief(s Status) contract.Leadership {
	return sdk.Belief(s.Mode == "leader", "", s.Epoch())
}
