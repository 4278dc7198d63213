package contract

// The environment the harness hands every node container. A target's own
// variables may not start with EnvPrefix.
const (
	EnvPrefix    = "SPLITBRAIN_"
	EnvNode      = "SPLITBRAIN_NODE"       // this node's name, n1..nN
	EnvPeers     = "SPLITBRAIN_PEERS"      // every other node as name:port, comma-separated
	EnvResource  = "SPLITBRAIN_RESOURCE"   // base URL of the resource
	EnvClockFile = "SPLITBRAIN_CLOCK_FILE" // the node's Skew, as JSON; may be missing
	EnvAddr      = "SPLITBRAIN_ADDR"       // where to serve the node API, ":7070"
	// EnvServices lists the target's service containers, each host:port,
	// comma-separated: "store:2379,cache:6379".
	EnvServices = "SPLITBRAIN_SERVICES"
	// EnvSecret is a random value made for each run, handed to every node
	// and service member alike: what a target's containers need to trust
	// one another (a token, a key derived from it) is made from it per
	// run, never committed. At least 128 random bits, in base32 letters
	// and digits (A-Z, 2-7).
	EnvSecret = "SPLITBRAIN_SECRET"
)

// The environment of each member of a service cluster (a manifest's
// service with members), besides the service's own.
const (
	EnvMember  = "SPLITBRAIN_MEMBER"  // this member's name, as its host name: "etcd2"
	EnvMembers = "SPLITBRAIN_MEMBERS" // every member of its service as name:port, comma-separated: "etcd1:2379,etcd2:2379"
	EnvNodes   = "SPLITBRAIN_NODES"   // every node as name:port, comma-separated: "n1:7070,n2:7070"
)

// The resource container's own environment.
const (
	EnvResourceMode = "SPLITBRAIN_RESOURCE_MODE" // Strict or Unfenced
	EnvResourceAddr = "SPLITBRAIN_RESOURCE_ADDR" // where it listens, ":7000"
	EnvResourceLog  = "SPLITBRAIN_RESOURCE_LOG"  // its decision log, one JSON line a decision
)
