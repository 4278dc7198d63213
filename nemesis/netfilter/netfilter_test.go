package netfilter

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func TestNormalize(t *testing.T) {
	got, err := Rules{
		Drop:          addrs("10.0.0.3", "::ffff:10.0.0.2", "10.0.0.3"),
		DropInitiated: addrs(),
	}.normalize()
	if err != nil {
		t.Fatal(err)
	}
	want := Rules{Drop: addrs("10.0.0.2", "10.0.0.3")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("normalize = %v, want %v", got, want)
	}

	_, err = Rules{DropInitiated: addrs("fd00::1")}.normalize()
	if err == nil || !strings.Contains(err.Error(), "only IPv4") {
		t.Fatalf("IPv6 address: err = %v, want an IPv4-only error", err)
	}
	if err := (Rules{Drop: []netip.Addr{{}}}).Validate(); err == nil {
		t.Fatal("zero address accepted")
	}
}

// TestRuleRoundTrip checks that Current's parser recognizes exactly what
// Apply writes, without a kernel.
func TestRuleRoundTrip(t *testing.T) {
	a := netip.MustParseAddr("172.18.0.5")
	for i, k := range kinds {
		got, gotK, err := parseRule(k.chain, dropExprs(a, k))
		if !isDropRule(dropExprs(a, k)) {
			t.Errorf("kind %d: Current would not read its rule as a drop", i)
		}
		if err != nil || got != a || gotK.chain != k.chain || gotK.offset != k.offset || gotK.initiated != k.initiated || gotK.opening != k.opening {
			t.Errorf("kind %d: parseRule(dropExprs(%v)) = %v, %+v, %v", i, a, got, gotK, err)
		}
	}
	e := dropExprs(a, kinds[0])
	if _, _, err := parseRule(inputChain, e[2:]); err == nil {
		t.Error("a rule without the nfproto check was recognized")
	}
	if _, _, err := parseRule(outputChain, e); err == nil {
		t.Error("a rule by source was recognized in the output chain")
	}
	if _, _, err := parseRule(inputChain, dropExprs(a, kinds[2])); err == nil {
		t.Error("a rule by destination was recognized in the input chain")
	}
}

// TestHandlerRejects covers the answers given before any netlink call, so it
// runs anywhere without privileges.
func TestHandlerRejects(t *testing.T) {
	h := Handler()
	for name, body := range map[string]string{
		"ipv6":         `{"drop":["fd00::2"]}`,
		"unknown":      `{"dropInitiated":["10.0.0.2"]}`,
		"garbage":      `{"drop":`,
		"not an addr":  `{"drop":["node2"]}`,
		"caller drop":  `{"drop":["192.0.2.1"]}`,
		"caller ct":    `{"drop_initiated":["::ffff:192.0.2.1"]}`,
		"caller among": `{"drop":["10.0.0.2","192.0.2.1"]}`,
		"caller to":    `{"drop_to":["192.0.2.1"]}`,
	} {
		req := httptest.NewRequest(http.MethodPut, "/rules", strings.NewReader(body))
		req.RemoteAddr = "192.0.2.1:40000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d (%s), want 400", name, rec.Code, rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("GET /health: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/rules", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /rules: %d, want 405", rec.Code)
	}
}

// TestInNamespace changes the nftables ruleset of the network namespace it
// runs in, so it runs only where it is explicitly told to: compile it with
// `go test -c`, run it in a throwaway container (NET_ADMIN) and set
// SPLITBRAIN_NETFILTER_NETNS=1. Never set that on a host.
func TestInNamespace(t *testing.T) {
	if testing.Short() || os.Getenv("SPLITBRAIN_NETFILTER_NETNS") != "1" {
		t.Skip("changes this network namespace's firewall: set SPLITBRAIN_NETFILTER_NETNS=1 inside a throwaway container")
	}
	before, err := Tables()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tables before: %q", before)
	if slices.Contains(before, "inet "+Table) {
		t.Fatal("our table is already present")
	}
	t.Cleanup(func() {
		if err := Clear(); err != nil {
			t.Error(err)
		}
	})

	if err := Clear(); err != nil { // absent table: no error
		t.Fatalf("Clear on absent table: %v", err)
	}
	want := Rules{Drop: addrs("10.99.0.2", "10.99.0.3"), DropInitiated: addrs("10.99.0.4"), DropTo: addrs("10.99.0.5")}
	for range 2 { // the second Apply replaces the first, it does not add to it
		if err := Apply(want); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Current = %v, want %v", got, want)
	}
	during, err := Tables()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tables during: %q", during)
	if w := slices.Sorted(slices.Values(append(slices.Clone(before), "inet "+Table))); !slices.Equal(during, w) {
		t.Fatalf("tables during = %q, want %q", during, w)
	}

	smaller := Rules{DropInitiated: addrs("10.99.0.2")}
	if err := Apply(smaller); err != nil {
		t.Fatal(err)
	}
	if got, err := Current(); err != nil || !reflect.DeepEqual(got, smaller) {
		t.Fatalf("after replace: Current = %v, %v, want %v", got, err, smaller)
	}

	if err := Apply(Rules{}); err != nil { // empty rules remove the table
		t.Fatal(err)
	}
	for range 2 {
		if err := Clear(); err != nil {
			t.Fatal(err)
		}
	}
	after, err := Tables()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(after, before) {
		t.Fatalf("tables after = %q, want %q (as before)", after, before)
	}
	if got, err := Current(); err != nil || !got.Empty() {
		t.Fatalf("Current after Clear = %v, %v, want empty", got, err)
	}
}

// TestImpairRoundTrip checks that Current's parser reads back what an
// impairment's rules say (its addresses and its loss; the delay and the
// rate live in the holder and the qdisc), without a kernel, and that
// Validate holds an impairment to its bounds.
func TestImpairRoundTrip(t *testing.T) {
	m := Impairment{To: addrs("10.0.0.5"), From: addrs("10.0.0.2", "10.0.0.3"), LossPercent: 17, Delay: time.Second, Rate: 5000}
	var got Impairment
	for _, r := range impairRules(m) {
		if isDropRule(r.exprs) {
			t.Fatalf("an impairment's rule %v reads as a drop", r.exprs)
		}
		if err := parseImpairRule(r.chain, r.exprs, &got); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got.To, m.To) || !slices.Equal(got.From, m.From) || got.LossPercent != m.LossPercent {
		t.Errorf("read back %+v, want %+v", got, m)
	}
	if n := len(impairExprs(m.To[0], 16, m)); n != 3 {
		t.Errorf("%d rules on output, want loss, rate and queue", n)
	}
	if n := len(impairExprs(m.From[0], 12, m)); n != 2 {
		t.Errorf("%d rules on input, want loss and queue (no rate)", n)
	}
	for _, bad := range []Impairment{
		{From: addrs("10.0.0.2"), LossPercent: 101},
		{From: addrs("10.0.0.2"), Delay: time.Second, Jitter: 2 * time.Second},
		{From: addrs("10.0.0.2"), Delay: MaxDelay + 1},
		{To: addrs("10.0.0.2"), Rate: MinRate - 1},
		{From: addrs("10.0.0.2")},
		{LossPercent: 5},
		{From: addrs("fd00::1"), LossPercent: 5},
	} {
		if err := (Rules{Impair: bad}).Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
