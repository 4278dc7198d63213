package main

import (
	"bytes"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// The lock service's answer, as a member encodes it (the header a
// generated message, an unknown field beside it), decodes to its
// revision and key; a request encodes its name and lease.
func TestLockCodec(t *testing.T) {
	header, err := (&etcdserverpb.ResponseHeader{ClusterId: 7, MemberId: 9, Revision: 1234, RaftTerm: 3}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var wire []byte
	wire = protowire.AppendTag(wire, 1, protowire.BytesType)
	wire = protowire.AppendBytes(wire, header)
	wire = protowire.AppendTag(wire, 9, protowire.Fixed64Type)
	wire = protowire.AppendFixed64(wire, 42)
	wire = protowire.AppendTag(wire, 2, protowire.BytesType)
	wire = protowire.AppendBytes(wire, []byte("/lock/694d9a"))
	var resp lockResponse
	if err := (lockCodec{}).Unmarshal(wire, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.revision != 1234 || string(resp.key) != "/lock/694d9a" {
		t.Errorf("decoded %d %q, want 1234 /lock/694d9a", resp.revision, resp.key)
	}
	if err := (lockCodec{}).Unmarshal(wire[:len(wire)-3], &resp); err == nil {
		t.Error("a truncated answer decoded")
	}

	got, err := (lockCodec{}).Marshal(&lockRequest{name: []byte("/splitbrain/lock"), lease: 0x694d9a})
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	want = protowire.AppendTag(want, 1, protowire.BytesType)
	want = protowire.AppendBytes(want, []byte("/splitbrain/lock"))
	want = protowire.AppendTag(want, 2, protowire.VarintType)
	want = protowire.AppendVarint(want, 0x694d9a)
	if !bytes.Equal(got, want) {
		t.Errorf("request encoded as %x, want %x", got, want)
	}
}
