package gateway

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func startGateway(t *testing.T, subnet string) Dialer {
	t.Helper()
	srv := httptest.NewServer(Server{Subnet: netip.MustParsePrefix(subnet)})
	t.Cleanup(srv.Close)
	return Dialer{Proxy: strings.TrimPrefix(srv.URL, "http://")}
}

func TestAnHTTPClientReachesAServerThroughTheGateway(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "healthy") }))
	defer target.Close()
	d := startGateway(t, "127.0.0.0/8")
	hc := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}, Timeout: 5 * time.Second}
	for range 3 { // kept alive: one connection through the gateway, used again
		res, err := hc.Get(target.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(b) != "healthy" {
			t.Fatalf("answer %q", b)
		}
	}
}

func TestAServerThatSpeaksFirstAndHalfCloses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "hello ")
		b, _ := io.ReadAll(c) // until the client closes its half
		c.Write(b)
	}()
	d := startGateway(t, "127.0.0.0/8")
	c, err := d.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "world")
	c.(interface{ CloseWrite() error }).CloseWrite()
	got, _ := io.ReadAll(c)
	if string(got) != "hello world" {
		t.Fatalf("read %q, want the greeting and the echo", got)
	}
}

func TestTheGatewayReachesOnlyItsSubnet(t *testing.T) {
	d := startGateway(t, "10.9.0.0/24")
	_, err := d.DialContext(context.Background(), "tcp", "127.0.0.1:22")
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden: 127.0.0.1:22: not an address of 10.9.0.0/24") {
		t.Fatalf("%v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // an address of the subnet where nothing listens
	_, err = startGateway(t, "127.0.0.0/8").DialContext(context.Background(), "tcp", ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "502 Bad Gateway") {
		t.Fatalf("an address of the subnet where nothing listens: %v", err)
	}
}
