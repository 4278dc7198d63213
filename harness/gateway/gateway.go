// Package gateway carries the controller's connections into a run's overlay network, whose addresses only its containers reach: an HTTP CONNECT proxy inside it, and the dialer that goes through it.
package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Server is the proxy: it opens a connection to an address of Subnet
// for each CONNECT request and copies both ways until either side ends.
// It refuses any other address: published on an engine's host, it must
// not be a way into that host's other networks.
type Server struct {
	Subnet netip.Prefix
	// DialTimeout bounds a connection's opening; 5 s by default.
	DialTimeout time.Duration
}

func (s Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "only CONNECT", http.StatusMethodNotAllowed)
		return
	}
	to, err := netip.ParseAddrPort(r.Host)
	if err != nil || !s.Subnet.Contains(to.Addr()) {
		http.Error(w, fmt.Sprintf("%s: not an address of %s", r.Host, s.Subnet), http.StatusForbidden)
		return
	}
	timeout := s.DialTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	out, err := net.DialTimeout("tcp", to.String(), timeout)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer out.Close()
	in, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer in.Close()
	if _, err := in.Write([]byte("HTTP/1.1 200 OK\r\n\r\n")); err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		io.Copy(out, buf) // what the client sent after its request, then the rest
		closeWrite(out)
	})
	io.Copy(in, out)
	closeWrite(in)
	wg.Wait()
}

// closeWrite tells the far side that nothing more comes, as a peer that
// ended its half of a connection would.
func closeWrite(c net.Conn) error {
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		return tc.CloseWrite()
	}
	return nil
}

// Dialer opens connections through the proxy at Proxy (host:port).
type Dialer struct {
	Proxy string
}

// DialContext opens a TCP connection to addr through the proxy, as
// net.Dialer's DialContext does to addr itself: an http.Transport's
// DialContext can be it.
func (d Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" {
		return nil, fmt.Errorf("gateway: %s: only tcp", network)
	}
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "tcp", d.Proxy)
	if err != nil {
		return nil, fmt.Errorf("gateway %s: %v", d.Proxy, err)
	}
	if deadline, ok := ctx.Deadline(); ok {
		c.SetDeadline(deadline)
	}
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr); err != nil {
		c.Close()
		return nil, fmt.Errorf("gateway %s: %v", d.Proxy, err)
	}
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("gateway %s: %v", d.Proxy, err)
	}
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		c.Close()
		return nil, fmt.Errorf("gateway %s: dial %s: %s: %s", d.Proxy, addr, res.Status, msg)
	}
	c.SetDeadline(time.Time{})
	if br.Buffered() > 0 { // the proxy sends nothing before the target does, but a target may speak first
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

// bufferedConn is a connection whose first bytes were read ahead.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite ends the connection's sending half, as a TCP connection's.
func (c *bufferedConn) CloseWrite() error { return closeWrite(c.Conn) }
