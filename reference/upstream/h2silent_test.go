package upstream

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/reference/config"
)

// relay forwards loopback connections to an origin, and can freeze the
// ones it carries: from then on they forward nothing either way and stay
// open, as a TCP connection to a host that left the network without a FIN
// (its retransmissions go nowhere). Connections accepted after the freeze
// forward normally: the host is back.
type relay struct {
	ln       net.Listener
	to       string
	mu       sync.Mutex
	frozen   chan struct{} // closed by freeze: the connections so far stop
	accepted int
	stop     chan struct{} // closed at the end: every connection closes
	// clientClosedFrozen counts frozen connections the client closed.
	clientClosedFrozen atomic.Int64
}

func startRelay(t *testing.T, to string) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{ln: ln, to: to, frozen: make(chan struct{}), stop: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); close(r.stop); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.accepted++
			frozen := r.frozen
			r.mu.Unlock()
			wg.Go(func() { r.carry(c, frozen) })
		}
	})
	return r
}

// carry forwards c to the origin until either side closes, or, once frozen
// is closed, holds both ends open and silent until the relay stops.
func (r *relay) carry(c net.Conn, frozen chan struct{}) {
	defer c.Close()
	o, err := net.Dial("tcp", r.to)
	if err != nil {
		return
	}
	defer o.Close()
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			select {
			case <-frozen:
				// Swallowed, and never a close; what the client sends is
				// read (and dropped) only to see it close.
				for src == c && err == nil {
					_, err = src.Read(buf)
				}
				if src == c {
					r.clientClosedFrozen.Add(1)
				}
				<-r.stop
				return
			default:
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	done := make(chan struct{}, 2)
	go func() { pipe(o, c); done <- struct{}{} }()
	go func() { pipe(c, o); done <- struct{}{} }()
	select {
	case <-done:
	case <-r.stop:
	}
}

func (r *relay) freeze() {
	r.mu.Lock()
	defer r.mu.Unlock()
	close(r.frozen)
	r.frozen = make(chan struct{})
}

func (r *relay) conns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted
}

func (r *relay) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// attempt is one round trip cut by its connect timeout after ct, as
// fetch's attempts are (TMO-1).
func attempt(t *testing.T, c *Client, tgt Target, path string, ct time.Duration) (time.Duration, error) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	timer := time.AfterFunc(ct, func() { cancel(ErrConnectTimeout) })
	defer timer.Stop()
	start := time.Now()
	resp, err := c.RoundTrip(ctx, tgt, newReq(t, "GET", path))
	if err != nil {
		return time.Since(start), err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return time.Since(start), err
}

// TMO-1, PRT-4: an h2 connection that stayed silent while an attempt on it
// waited out its connect timeout takes no new requests: once the origin is
// back, the next attempt connects afresh at once instead of queueing behind
// a dead connection's retransmissions (and timing out again). A connection
// that answered anything meanwhile, its origin only slow on one request,
// keeps carrying the next ones.
func TestH2SilentConnectionNotReused(t *testing.T) {
	const ct = 300 * time.Millisecond
	e := startEmu(t)
	c := newClient(t, e)
	r := startRelay(t, e.Addr("h2"))
	tgt := Target{Protocol: config.ProtocolHTTP2, Address: "origin.test", Port: r.port(), Host: "origin.test"}

	if _, err := attempt(t, c, tgt, "/silent/before", ct); err != nil {
		t.Fatalf("before the freeze: %v", err)
	}
	r.freeze()
	took, err := attempt(t, c, tgt, "/silent/away", ct)
	var ue *Error
	if !errors.As(err, &ue) || !ue.ConnectFailure {
		t.Fatalf("on the frozen connection: %v after %v, want a connect failure after %v", err, took, ct)
	}
	// The client closes the dead connection rather than leave it open
	// (nothing else would: no stream is left on it), at the latest when
	// its PING goes unanswered (retirePing).
	for deadline := time.Now().Add(retirePing + 5*time.Second); r.clientClosedFrozen.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the client left the silent connection open")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Back: the next attempt is answered, on a second connection.
	for i := range 3 {
		path := "/silent/back-" + strconv.Itoa(i)
		if took, err := attempt(t, c, tgt, path, ct); err != nil {
			t.Fatalf("%s after the origin came back: %v after %v, want an answer before connectTimeout %v", path, err, took, ct)
		}
	}
	if n := r.conns(); n != 2 {
		t.Fatalf("%d connections through the relay, want 2 (the frozen one, then one for every request after)", n)
	}
	waitEnded(t, e, journal.Query{PathPrefix: "/silent/back-"}, 3)
}

// The other half: a slow request on a connection that carries answers to
// others meanwhile leaves the connection current.
func TestH2SlowRequestKeepsConnection(t *testing.T) {
	const ct = 300 * time.Millisecond
	e := startEmu(t)
	c := newClient(t, e)
	tgt := target(t, e, config.ProtocolHTTP2, "h2", "origin.test")
	if _, err := e.AddRules(rules.Rule{Match: rules.Match{PathPrefix: "/slow/held"}, Unlimited: true,
		Action: rules.Action{Delay: rules.Duration(10 * ct)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := attempt(t, c, tgt, "/slow/first", ct); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() { _, err := attempt(t, c, tgt, "/slow/held", ct); held <- err }()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := e.Journal().WaitRequests(ctx, journal.Query{PathPrefix: "/slow/held"}, 1); err != nil {
		t.Fatalf("the held request never reached the origin: %v", err)
	}
	// Answers on the same connection while the held one waits.
	for i := 0; ; i++ {
		select {
		case err := <-held:
			if err == nil {
				t.Fatalf("the held request was answered within connectTimeout %v", ct)
			}
		default:
			if _, err := attempt(t, c, tgt, "/slow/other-"+strconv.Itoa(i), ct); err != nil {
				t.Fatal(err)
			}
			continue
		}
		break
	}
	if _, err := attempt(t, c, tgt, "/slow/after", ct); err != nil {
		t.Fatal(err)
	}
	if conns := e.Journal().Query(journal.Query{Listener: "h2"}).Conns; len(conns) != 1 {
		t.Fatalf("%d connections, want 1: a slow request on a live connection does not retire it", len(conns))
	}
}

// Issue #14 (the soak's RSS): a closed h2 connection, with its TLS and
// frame buffers, is garbage soon after it closed, not held by x/net's
// timers for the idle timeout (30 s) as it was: under GOAWAY churn the
// closed connections piled up, 40 MB at the soak's rate. x/net still holds
// a connection that never carried a second request for up to 5 s after it
// closed (its "unused" grace in the read loop's cleanup), so the test
// allows that and a margin, well under DefaultIdleTimeout.
func TestH2ClosedConnectionsCollected(t *testing.T) {
	const conns, within = 20, 8 * time.Second
	if within >= DefaultIdleTimeout {
		t.Fatalf("the bound %v would not tell the idle timeout %v apart", within, DefaultIdleTimeout)
	}
	e := startEmu(t)
	c := newClient(t, e)
	tgt := target(t, e, config.ProtocolHTTP2, "h2", "origin.test")
	// The client's own transport for the target, its dial watched.
	rt, err := c.roundTripper(tgt)
	if err != nil {
		t.Fatal(err)
	}
	h := rt.(*h2Conn)
	var dialed, collected atomic.Int64
	dial := h.dial
	h.dial = func(ctx context.Context) (net.Conn, error) {
		nc, err := dial(ctx)
		if err == nil {
			dialed.Add(1)
			runtime.AddCleanup(nc.(*tls.Conn), func(*atomic.Int64) { collected.Add(1) }, &collected)
		}
		return nc, err
	}
	// Every request's connection goes away (the request fails).
	if _, err := e.AddRules(rules.Rule{Match: rules.Match{PathPrefix: "/gc/"}, Unlimited: true,
		Action: rules.Action{GoAway: &rules.Cut{Code: "NO_ERROR"}}}); err != nil {
		t.Fatal(err)
	}
	for i := range conns {
		if resp, _, err := roundTrip(t, c, tgt, newReq(t, "GET", "/gc/"+strconv.Itoa(i))); err == nil {
			t.Fatalf("request %d: %s, want the GOAWAY", i, resp.Status)
		}
	}
	waitClosed(t, e, "h2", conns, 5*time.Second)
	// All but the last: h2Conn holds that one as its current connection
	// until the next request finds it gone (or its idle timer does).
	start := time.Now()
	for collected.Load() < dialed.Load()-1 && time.Since(start) < within {
		runtime.GC()
		time.Sleep(100 * time.Millisecond)
	}
	if n, d := collected.Load(), dialed.Load(); d < conns || n < d-1 {
		t.Fatalf("%d of %d closed connections collected %v after they closed, want all but the current one (%d requests)", n, d, within, conns)
	}
	t.Logf("%d closed connections collected %v after they closed", dialed.Load(), time.Since(start).Round(100*time.Millisecond))
}
