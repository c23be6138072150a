package h1serve

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeconform/edgeconform/reference/receive"
)

// Server serves an http.Handler over HTTP/1.1 (and h2c with prior
// knowledge, handed to net/http) on net.Listeners. Set its fields before
// Serve; a Server must not be copied after first use.
type Server struct {
	// Handler answers every request (and, if it is receive.Checking, the
	// placeholder of every refused head).
	Handler http.Handler
	// Limits are the receive step's limits (the zero value: the defaults).
	Limits receive.Limits
	// ReadHeaderTimeout bounds the wait for a connection's first head;
	// IdleTimeout (default ReadHeaderTimeout) the wait for each next one,
	// head included. 0 for both: no timeout.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// Logger gets the server's own errors (default slog.Default()).
	Logger *slog.Logger
	// H2 serves h2c connections (set up by receive.Configure with the same
	// Limits and Handler); nil: one made at the first Serve.
	H2 *http.Server

	initOnce sync.Once
	baseCtx  context.Context
	h2ln     *chanListener
	h2done   chan struct{}

	mu        sync.Mutex
	conns     map[*conn]struct{}
	listeners map[net.Listener]struct{}
	shutting  atomic.Bool

	dateV atomic.Pointer[dateCache]

	// yield is called between a connection's requests, when nothing of
	// the next head is held (conn.yieldBeforeRead); nil: runtime.Gosched.
	// Tests count the calls.
	yield func()
}

type dateCache struct {
	sec int64
	b   []byte
}

func (s *Server) log() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

func (s *Server) headerTimeout() time.Duration { return s.ReadHeaderTimeout }

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return s.ReadHeaderTimeout
}

// date is the Date field's value, formatted once a second.
func (s *Server) date() []byte {
	now := time.Now()
	if d := s.dateV.Load(); d != nil && d.sec == now.Unix() {
		return d.b
	}
	d := &dateCache{sec: now.Unix(), b: now.UTC().AppendFormat(nil, http.TimeFormat)}
	s.dateV.Store(d)
	return d.b
}

func (s *Server) init() {
	s.initOnce.Do(func() {
		if s.Limits == (receive.Limits{}) {
			s.Limits = receive.DefaultLimits()
		}
		s.baseCtx = context.Background()
		s.conns = map[*conn]struct{}{}
		s.listeners = map[net.Listener]struct{}{}
		if s.H2 == nil {
			s.H2 = &http.Server{Handler: s.Handler, ErrorLog: slog.NewLogLogger(s.log().Handler(), slog.LevelWarn)}
			receive.Configure(s.H2, s.Limits, s.log())
		}
		s.h2ln = newChanListener()
		s.h2done = make(chan struct{})
		go func() {
			defer close(s.h2done)
			_ = s.H2.Serve(s.h2ln)
		}()
	})
}

// Serve accepts connections on ln and serves each in its own goroutine
// until Shutdown or Close (then it returns http.ErrServerClosed) or an
// accept error that is not temporary.
func (s *Server) Serve(ln net.Listener) error {
	s.init()
	s.mu.Lock()
	if s.shutting.Load() {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.shutting.Load() {
				return http.ErrServerClosed
			}
			if temporary(err) {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log().Warn("h1serve: accept error; retrying", "error", err, "delay", delay.String())
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		c := newConn(s, nc)
		if !s.track(c) {
			nc.Close()
			return http.ErrServerClosed
		}
		go c.serve()
	}
}

// temporary reports whether an accept error is worth a retry (a
// timeout, EMFILE and the like), as net/http judges it.
func temporary(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	t, ok := err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}

func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutting.Load() {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// serveH2 hands an h2c connection to the h2 server.
func (s *Server) serveH2(nc net.Conn) bool { return s.h2ln.deliver(nc) }

// Shutdown stops accepting, closes idle connections and waits, until ctx
// ends, for the active ones to finish their request; the h2 server shuts
// down the same way.
func (s *Server) Shutdown(ctx context.Context) error {
	s.init()
	s.stopAccepting()
	h2err := make(chan error, 1)
	go func() { h2err <- s.H2.Shutdown(ctx) }()
	wait := time.Millisecond
	for {
		if s.closeIdle() == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
			wait = min(2*wait, 100*time.Millisecond)
		}
	}
	return <-h2err
}

// Close closes the listeners and every connection at once.
func (s *Server) Close() error {
	s.init()
	s.stopAccepting()
	s.mu.Lock()
	for c := range s.conns {
		c.state.Store(stateClosed)
		c.nc.Close()
	}
	s.mu.Unlock()
	return s.H2.Close()
}

func (s *Server) stopAccepting() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutting.Store(true)
	for ln := range s.listeners {
		ln.Close()
	}
	s.h2ln.Close()
}

// closeIdle closes the idle connections and counts those left.
func (s *Server) closeIdle() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.state.CompareAndSwap(stateIdle, stateClosed) {
			c.nc.Close()
		}
	}
	return len(s.conns)
}

// chanListener is the net.Listener the h2 server accepts handed-off
// connections on.
type chanListener struct {
	ch     chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newChanListener() *chanListener {
	return &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) deliver(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return h2Addr{} }

type h2Addr struct{}

func (h2Addr) Network() string { return "h2c" }
func (h2Addr) String() string  { return "h2c-handoff" }
