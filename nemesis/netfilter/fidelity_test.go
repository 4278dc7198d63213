package netfilter

// The impairments measured on a real link: these tests run inside
// throwaway containers (harness's TestPacketFidelity starts them), one
// serving echoes in a peer's namespace, the other impairing its own
// link to that peer and measuring what gets through. Bounds are wide:
// they prove the mechanism works on a loaded machine; the figures go to
// docs/figures.md, not into assertions.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

// Environment of the tests that run in a container.
const (
	envEcho = "SPLITBRAIN_FIDELITY_ECHO" // "1": serve echoes until killed
	envPeer = "SPLITBRAIN_FIDELITY_PEER" // the echo server's address: measure the link to it
	echoUDP = 7980                       // echoes each datagram back
	echoTCP = 7981                       // counts what arrives over sinkFor after its first byte, answers the count
	sinkFor = 4 * time.Second
)

// TestEchoInNamespace serves the peer's side of the measurements.
func TestEchoInNamespace(t *testing.T) {
	if os.Getenv(envEcho) != "1" {
		t.Skip("the peer side of TestFidelityInNamespace: set " + envEcho + "=1 in a throwaway container")
	}
	pc, err := net.ListenPacket("udp4", fmt.Sprintf(":%d", echoUDP))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
	l, err := net.Listen("tcp4", fmt.Sprintf(":%d", echoTCP))
	if err != nil {
		t.Fatal(err)
	}
	for {
		conn, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		go sink(conn)
	}
}

// sink counts the bytes that arrive in sinkFor after the first, and
// writes the count back.
func sink(conn net.Conn) {
	defer conn.Close()
	buf := make([]byte, 64<<10)
	if _, err := conn.Read(buf); err != nil { // the first read starts the clock
		return
	}
	total := uint64(0)
	end := time.Now().Add(sinkFor)
	for time.Now().Before(end) {
		_ = conn.SetReadDeadline(end)
		n, err := conn.Read(buf)
		total += uint64(n)
		if err != nil {
			break
		}
	}
	_ = conn.SetReadDeadline(time.Time{})
	_, _ = conn.Write(binary.BigEndian.AppendUint64(nil, total))
}

// TestFidelityInNamespace impairs this namespace's link to the peer, one
// mechanism at a time, and measures it against the link unimpaired.
func TestFidelityInNamespace(t *testing.T) {
	addr := os.Getenv(envPeer)
	if addr == "" {
		t.Skip("impairs this namespace's link: set " + envPeer + " inside a throwaway container, beside a peer serving TestEchoInNamespace")
	}
	// Loss and delay are measured on what the peer sends (the input
	// hook, as between nodes), the rate on what this side sends.
	peer := []netip.Addr{netip.MustParseAddr(addr)}
	t.Cleanup(func() {
		if err := Clear(); err != nil {
			t.Error(err)
		}
	})
	impair := func(t *testing.T, m Impairment) {
		t.Helper()
		if err := Apply(Rules{Impair: m}); err != nil {
			t.Fatal(err)
		}
		got, err := Current()
		if err != nil || !reflect.DeepEqual(got.Impair, m) {
			t.Fatalf("Current = %+v, %v; want %+v", got.Impair, err, m)
		}
	}
	udp := netip.AddrPortFrom(peer[0], echoUDP).String()
	tcp := netip.AddrPortFrom(peer[0], echoTCP).String()

	t.Run("loss", func(t *testing.T) {
		const sent = 4000
		clean := echoes(t, udp, sent, 0)
		impair(t, Impairment{From: peer, LossPercent: 25})
		lossy := echoes(t, udp, sent, 0)
		if err := Clear(); err != nil {
			t.Fatal(err)
		}
		share := 1 - float64(len(lossy))/sent
		t.Logf("FIGURE loss: asked 25%%, %d of %d echoes lost unimpaired, %.1f%% lost impaired", sent-len(clean), sent, 100*share)
		if len(clean) < sent*99/100 || share < 0.18 || share > 0.32 {
			t.Errorf("lost %.1f%% (unimpaired %d of %d), want about 25%%", 100*share, sent-len(clean), sent)
		}
	})
	t.Run("delay", func(t *testing.T) {
		const sent = 1000
		base := percentiles(echoes(t, udp, sent, 2*time.Millisecond))
		impair(t, Impairment{From: peer, Delay: 100 * time.Millisecond, Jitter: 20 * time.Millisecond})
		held := percentiles(echoes(t, udp, sent, 2*time.Millisecond))
		// A sidecar killed while its rules stand: with nobody on the
		// queue, its bypass lets the packets through at once.
		mu.Lock()
		err := plumbing.stopHolder()
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		orphaned := percentiles(echoes(t, udp, sent/4, 2*time.Millisecond))
		if err := Clear(); err != nil {
			t.Fatal(err)
		}
		if orphaned[0] > 50*time.Millisecond {
			t.Errorf("with the queue's holder gone: a median round trip of %s, want the packets bypassed", orphaned[0])
		}
		median, p99 := held[0]-base[0], held[1]-base[0]
		t.Logf("FIGURE delay: asked 100ms±20ms, round trip unimpaired median %s p99 %s; added median %s p99 %s; holder gone: median round trip %s",
			base[0].Round(time.Microsecond), base[1].Round(time.Microsecond), median.Round(time.Microsecond), p99.Round(time.Microsecond), orphaned[0].Round(time.Microsecond))
		if median < 80*time.Millisecond || median > 200*time.Millisecond || p99 < 100*time.Millisecond {
			t.Errorf("added median %s, p99 %s: want about 100ms, and a p99 past it", median, p99)
		}
	})
	t.Run("rate", func(t *testing.T) {
		const rate = 8000
		clean := throughput(t, tcp)
		impair(t, Impairment{To: peer, Rate: rate})
		slow := throughput(t, tcp)
		if err := Clear(); err != nil {
			t.Fatal(err)
		}
		t.Logf("FIGURE rate: asked %d B/s, unimpaired %.0f B/s, impaired %.0f B/s", rate, clean, slow)
		if slow < rate/2 || slow > rate*3/2 || clean < 10*rate {
			t.Errorf("impaired %.0f B/s (unimpaired %.0f), want about %d", slow, clean, rate)
		}
	})
	if got, err := Current(); err != nil || !got.Empty() {
		t.Fatalf("after Clear: Current = %+v, %v", got, err)
	}
}

// echoes sends n numbered datagrams to addr, one every gap (a burst when
// 0, paced by the replies' reading), and returns the round trip of each
// that came back.
func echoes(t *testing.T, addr string, n int, gap time.Duration) []time.Duration {
	t.Helper()
	conn, err := net.Dial("udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sentAt := make([]time.Time, n)
	var mu sync.Mutex
	var rtts []time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64)
		for {
			_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			k, err := conn.Read(buf)
			if err != nil {
				return
			}
			if k >= 4 {
				i := binary.BigEndian.Uint32(buf)
				mu.Lock()
				rtts = append(rtts, time.Since(sentAt[i]))
				mu.Unlock()
			}
		}
	}()
	for i := range n {
		mu.Lock()
		sentAt[i] = time.Now()
		mu.Unlock()
		if _, err := conn.Write(binary.BigEndian.AppendUint32(make([]byte, 0, 64), uint32(i))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(max(gap, 200*time.Microsecond)) // no burst past the sockets' buffers
	}
	<-done
	return rtts
}

// percentiles are the median and 99th percentile of ds.
func percentiles(ds []time.Duration) [2]time.Duration {
	slices.Sort(ds)
	if len(ds) == 0 {
		return [2]time.Duration{}
	}
	return [2]time.Duration{ds[len(ds)/2], ds[len(ds)*99/100]}
}

// throughput sends to addr's sink as fast as TCP lets it, and returns the
// bytes per second the sink counted.
func throughput(t *testing.T, addr string) float64 {
	t.Helper()
	conn, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go func() {
		chunk := make([]byte, 16<<10)
		for {
			if _, err := conn.Write(chunk); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(sinkFor + 20*time.Second))
	var count [8]byte
	if _, err := io.ReadFull(conn, count[:]); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return float64(binary.BigEndian.Uint64(count[:])) / sinkFor.Seconds()
}
