package main

import (
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
)

// A recipe is how a node takes the leadership in a session and gives it
// up: one value a round, bound to the round's session, used from run's
// goroutine only.
type recipe interface {
	// campaign blocks until the node leads, and says with what token.
	campaign(ctx context.Context, id string) (token int64, err error)
	// resign gives the leadership up.
	resign(ctx context.Context) error
}

// The recipes, by ETCD_ELECTOR_RECIPE.
const (
	// recipeElection is the client's concurrency election: Campaign,
	// Resign, the leader key's create revision as the token.
	recipeElection = "election"
	// recipeLock is etcd's lock service (the v3lock API, etcdctl lock):
	// the server takes the lock for the session's lease and answers once
	// it is held; the revision of its answer is the token, later than any
	// earlier holder's.
	recipeLock = "lock"
)

// newRecipe returns a new round's recipe of the given name.
func newRecipe(name string, cli *clientv3.Client, prefix string) (func(*concurrency.Session) recipe, error) {
	switch name {
	case recipeElection:
		return func(s *concurrency.Session) recipe { return &election{e: concurrency.NewElection(s, prefix)} }, nil
	case recipeLock:
		return func(s *concurrency.Session) recipe { return &lock{cli: cli, name: prefix, lease: s.Lease()} }, nil
	}
	return nil, fmt.Errorf("unknown recipe %q (want %q or %q)", name, recipeElection, recipeLock)
}

// election is the client's concurrency election.
type election struct{ e *concurrency.Election }

func (r *election) campaign(ctx context.Context, id string) (int64, error) {
	if err := r.e.Campaign(ctx, id); err != nil {
		return 0, err
	}
	return r.e.Rev(), nil
}

func (r *election) resign(ctx context.Context) error { return r.e.Resign(ctx) }

// lock is etcd's lock service, called on the client's connection. The
// server waits its turn for the session's lease (concurrency.Mutex, run
// by the member) and answers with the key it holds the lock by: before
// etcd 3.5 without asking whether the key still stands
// (etcd-io/etcd#11456), so a lease that expired while the call waited
// is answered with a lock held by a deleted key.
type lock struct {
	cli   *clientv3.Client
	name  string
	lease clientv3.LeaseID // the session's
	key   []byte           // held, once campaign has returned
}

func (r *lock) campaign(ctx context.Context, _ string) (int64, error) {
	var resp lockResponse
	req := &lockRequest{name: []byte(r.name), lease: int64(r.lease)}
	if err := r.cli.ActiveConnection().Invoke(ctx, "/v3lockpb.Lock/Lock", req, &resp, grpc.ForceCodec(lockCodec{})); err != nil {
		return 0, err
	}
	r.key = resp.key
	return resp.revision, nil
}

func (r *lock) resign(ctx context.Context) error {
	var resp unlockResponse
	return r.cli.ActiveConnection().Invoke(ctx, "/v3lockpb.Lock/Unlock", &unlockRequest{key: r.key}, &resp, grpc.ForceCodec(lockCodec{}))
}

// The lock service's messages, as far as the recipe reads them
// (v3lockpb's v3lock.proto: LockRequest{name = 1, lease = 2},
// LockResponse{header = 1, key = 2}, UnlockRequest{key = 1},
// UnlockResponse{header = 1}, and the header's revision = 3). The
// generated package is in etcd's server module, which splitbrain's module
// does not take in for four messages.
type (
	lockRequest struct {
		name  []byte
		lease int64
	}
	lockResponse struct {
		revision int64
		key      []byte
	}
	unlockRequest  struct{ key []byte }
	unlockResponse struct{}
)

// lockCodec encodes the lock service's messages in protobuf's wire format.
type lockCodec struct{}

func (lockCodec) Name() string { return "proto" }

func (lockCodec) Marshal(v any) ([]byte, error) {
	var b []byte
	switch m := v.(type) {
	case *lockRequest:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m.name)
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(m.lease))
	case *unlockRequest:
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m.key)
	default:
		return nil, fmt.Errorf("lock codec: cannot encode %T", v)
	}
	return b, nil
}

func (lockCodec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *lockResponse:
		return fields(data, func(num protowire.Number, val []byte, n uint64) error {
			switch num {
			case 1:
				return fields(val, func(num protowire.Number, _ []byte, n uint64) error {
					if num == 3 {
						m.revision = int64(n)
					}
					return nil
				})
			case 2:
				m.key = append([]byte(nil), val...)
			}
			return nil
		})
	case *unlockResponse:
		return nil
	}
	return fmt.Errorf("lock codec: cannot decode %T", v)
}

// fields calls f with each field of the message b: its number, and its
// bytes (length-delimited) or its value (varint); other wire types are
// skipped.
func fields(b []byte, f func(num protowire.Number, val []byte, n uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var (
			val []byte
			v   uint64
		)
		switch typ {
		case protowire.BytesType:
			val, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := f(num, val, v); err != nil {
			return err
		}
	}
	return nil
}
