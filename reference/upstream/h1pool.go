package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/reference/config"
)

// h1Pool is the HTTP/1.1 connection pool of one target (PRT-4, issue #12
// item 6, issue #14): at most max connections (dialling, in use or idle),
// every one of which may stay idle; a request beyond the bound waits in
// line for a connection under its context. An idle connection closes after
// idleFor, by the pool's one reaper timer (no goroutine, and no timer
// operation per request: the reaper is armed at the oldest idle
// connection's deadline and re-armed when it fires, issue #14).
type h1Pool struct {
	c       *Client
	t       Target
	max     int
	idleFor time.Duration

	mu      sync.Mutex
	idle    []*h1Conn // by idleAt, most recently used last
	open    int       // dialling, in use or idle
	waiters []chan *h1Conn
	closed  bool
	reaper  *time.Timer // reap; made by the first put
	armed   bool        // reaper will fire
}

var errClientClosed = errors.New("upstream: client closed")

func newH1Pool(c *Client, t Target) *h1Pool {
	return &h1Pool{c: c, t: t, max: c.maxConns, idleFor: c.idle}
}

// roundTrip makes one attempt: it never sends the request twice (ATT-3,
// ATT-4). connected says whether a connection was had (for classify), ip
// which origin IP it had. The request must have been checked
// (checkH1Request).
func (p *h1Pool) roundTrip(ctx context.Context, req *http.Request, uri, host string) (_ *http.Response, ip string, connected bool, _ error) {
	pc, reused, err := p.get(ctx)
	if err != nil {
		return nil, "", false, err
	}
	if trace := httptrace.ContextClientTrace(ctx); trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{Conn: pc.nc, Reused: reused, WasIdle: reused})
	}
	// A cancelled ctx (connect, response or read timeout in fetch, or the
	// client gone) closes the connection, which unblocks whoever reads or
	// writes it; the stop is undone when the response is done.
	stop := context.AfterFunc(ctx, pc.closeFn)
	resp, err := pc.exchange(ctx, req, uri, host, stop)
	if err != nil {
		stop()
		pc.close()
		if reused {
			err = fmt.Errorf("on a reused connection: %w", err)
		}
		return nil, pc.ip, true, err
	}
	return resp, pc.ip, true, nil
}

// get returns an idle connection, dials one, or waits for one.
func (p *h1Pool) get(ctx context.Context) (pc *h1Conn, reused bool, err error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, false, errClientClosed
		}
		if n := len(p.idle); n > 0 {
			pc = p.idle[n-1]
			p.idle[n-1] = nil
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			if !pc.usable() {
				pc.close() // the origin closed it meanwhile: dial instead
				continue
			}
			return pc, true, nil
		}
		if p.open < p.max {
			p.open++
			p.mu.Unlock()
			pc, err = p.dial(ctx)
			return pc, false, err
		}
		w := make(chan *h1Conn, 1)
		p.waiters = append(p.waiters, w)
		p.mu.Unlock()
		return p.wait(ctx, w)
	}
}

// wait waits in line for a connection handed over (or, nil, a slot to
// dial in) until ctx ends; shutdown closes w.
func (p *h1Pool) wait(ctx context.Context, w chan *h1Conn) (*h1Conn, bool, error) {
	select {
	case pc, ok := <-w:
		switch {
		case !ok:
			return nil, false, errClientClosed
		case pc == nil:
			pc, err := p.dial(ctx)
			return pc, false, err
		}
		return pc, true, nil
	case <-ctx.Done():
	}
	p.mu.Lock()
	if i := slices.Index(p.waiters, w); i >= 0 {
		p.waiters = slices.Delete(p.waiters, i, i+1)
		p.mu.Unlock()
	} else {
		// Handed something just now: pass it on.
		p.mu.Unlock()
		if pc, ok := <-w; pc != nil {
			p.put(pc)
		} else if ok {
			p.slotFreed()
		}
	}
	return nil, false, fmt.Errorf("waiting for one of %d connections: %w", p.max, ctx.Err())
}

// dial makes a new connection in a slot already counted in open.
func (p *h1Pool) dial(ctx context.Context) (*h1Conn, error) {
	var (
		nc  net.Conn
		err error
	)
	if p.t.Protocol == config.ProtocolHTTPS {
		nc, err = p.c.dialTLS(ctx, p.t, "http/1.1")
	} else {
		nc, err = p.c.dialTCP(ctx, p.t)
	}
	if err != nil {
		p.slotFreed()
		return nil, err
	}
	return newH1Conn(p, nc), nil
}

// put takes back a connection whose response ended cleanly: to the first
// waiter, else idle.
func (p *h1Pool) put(pc *h1Conn) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pc.close()
		return
	}
	if len(p.waiters) > 0 {
		w := p.waiters[0]
		p.waiters = slices.Delete(p.waiters, 0, 1)
		p.mu.Unlock()
		w <- pc
		return
	}
	pc.idleAt = time.Now()
	p.idle = append(p.idle, pc)
	if !p.armed {
		p.armed = true
		if p.reaper == nil {
			p.reaper = time.AfterFunc(p.idleFor, p.reap)
		} else {
			p.reaper.Reset(p.idleFor)
		}
	}
	p.mu.Unlock()
}

// slotFreed is a connection closed (or a dial failed): its slot goes to the
// first waiter, who dials, else it is free.
func (p *h1Pool) slotFreed() {
	p.mu.Lock()
	if len(p.waiters) > 0 && !p.closed {
		w := p.waiters[0]
		p.waiters = slices.Delete(p.waiters, 0, 1)
		p.mu.Unlock()
		w <- nil
		return
	}
	p.open--
	p.mu.Unlock()
}

// reap is the reaper timer: it closes the connections idle for idleFor
// or longer (a prefix of idle, which is in idleAt order: put appends, get
// takes from the end) and is re-armed at the deadline of the oldest one
// left, if any; if none, the next put arms it.
func (p *h1Pool) reap() {
	p.mu.Lock()
	now := time.Now()
	n := 0
	for n < len(p.idle) && now.Sub(p.idle[n].idleAt) >= p.idleFor {
		n++
	}
	expired := slices.Clone(p.idle[:n])
	p.idle = slices.Delete(p.idle, 0, n)
	if len(p.idle) > 0 && !p.closed {
		p.reaper.Reset(p.idleFor - now.Sub(p.idle[0].idleAt))
	} else {
		p.armed = false
	}
	p.mu.Unlock()
	for _, pc := range expired {
		pc.close()
	}
}

// shutdown closes the idle connections now and the others when their
// responses are done (Client.Close, or the target dropped from the LRU).
func (p *h1Pool) shutdown() {
	p.mu.Lock()
	p.closed = true
	idle := p.idle
	p.idle = nil
	if p.reaper != nil {
		p.reaper.Stop()
		p.armed = false
	}
	for _, w := range p.waiters {
		close(w)
	}
	p.waiters = nil
	p.mu.Unlock()
	for _, pc := range idle {
		pc.close()
	}
}

// CloseIdleConnections is shutdown (the name closeIdle looks for).
func (p *h1Pool) CloseIdleConnections() { p.shutdown() }

// openConns is the number of connections dialling, in use or idle.
func (p *h1Pool) openConns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open
}
