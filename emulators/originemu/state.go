package originemu

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/emulators/emuapi"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// Serving names a listener's own profile in a StateChange.
const Serving = emuapi.Serving

// What a state change does to the listener's open connections.
const (
	KeepConns  = emuapi.KeepConns  // they go on as they were (the default)
	ResetConns = emuapi.ResetConns // each is closed with a TCP RST
	StallConns = emuapi.StallConns // nothing more is read or written on them until the next change
)

// StateChange switches a listener to another profile at runtime, on the
// same address (emuapi.StateChange).
type StateChange = emuapi.StateChange

// ErrClosed is returned for a state change after Close.
var ErrClosed = errors.New("originemu: emulator closed")

// listenerState is what a listener does now. The port is held all along by
// a bound socket that never listens (the keeper); the states that take
// connections add a listening socket on the same address (SO_REUSEPORT),
// refuse has none (a SYN to a port nobody listens on is answered with RST),
// and syn-drop has one with a full accept queue.
type listenerState struct {
	mu      sync.Mutex
	state   Profile
	since   time.Time
	until   time.Time
	gen     uint64      // counts changes, so a stale For timer does nothing
	timer   *time.Timer // ends a change with For
	keeper  *rawSocket
	ln      net.Listener // serving profiles, TLS faults, blackhole
	syn     *rawSocket   // syn-drop
	tlsFor  map[Profile]*tls.Config
	conns   map[*liveConn]struct{}
	stopped bool
	shaping rules.Shaping   // applies to every connection, changeable at runtime
	shapeGn uint64          // counts shaping changes
	done    <-chan struct{} // the emulator's context
}

// shape is the connections' shaping now and its generation.
func (s *listenerState) shape() (rules.Shaping, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.shaping, s.shapeGn
}

// SetListenerShaping changes the shaping of the named listener's
// connections, open ones included; the zero Shaping removes it. The change
// is journaled as a listener event.
func (e *Emulator) SetListenerShaping(name string, sh rules.Shaping) (ListenerInfo, error) {
	l, ok := e.byName[name]
	if !ok {
		return ListenerInfo{}, fielderr.Errors{{Field: "listener", Problem: fmt.Sprintf("no listener named %q (have %v)", name, e.listenerNames())}}
	}
	var errs fielderr.List
	sh.Check(&errs, "shaping", false)
	if err := errs.Err(); err != nil {
		return ListenerInfo{}, err
	}
	l.st.mu.Lock()
	if l.st.stopped {
		l.st.mu.Unlock()
		return ListenerInfo{}, ErrClosed
	}
	l.st.shaping = sh
	l.st.shapeGn++
	state := string(l.st.state)
	l.st.mu.Unlock()
	e.journal.ListenerChanged(journal.ListenerEvent{Listener: name, At: time.Now(), From: state, To: state,
		Cause: "api", Note: "shaping: " + sh.String()})
	return e.info(l), nil
}

// SetListenerState switches the named listener as ch says and returns its
// new description. Every change is journaled (journal.ListenerEvent).
func (e *Emulator) SetListenerState(name string, ch StateChange) (ListenerInfo, error) {
	l, ok := e.byName[name]
	if !ok {
		return ListenerInfo{}, fielderr.Errors{{Field: "listener", Problem: fmt.Sprintf("no listener named %q (have %v)", name, e.listenerNames())}}
	}
	to, err := e.checkChange(l, ch)
	if err != nil {
		return ListenerInfo{}, err
	}
	if err := e.switchState(l, to, ch.For.D(), ch.Existing, "api"); err != nil {
		return ListenerInfo{}, err
	}
	return e.info(l), nil
}

func (e *Emulator) checkChange(l *listener, ch StateChange) (Profile, error) {
	var errs fielderr.List
	to := ch.State
	switch {
	case to == Serving && !l.Profile.Serves():
		errs.Add("state", "listener %q was started as %s, which serves nothing: name the profile to serve as (http, h2c, https, h2)", l.Name, l.Profile)
	case to == Serving:
		to = l.Profile
	case to == "":
		errs.Add("state", "is required: %s or %s", Serving, profileNames())
	case !to.Valid():
		errs.Add("state", "%v", errUnknownProfile(to))
	}
	switch ch.Existing {
	case "", KeepConns, ResetConns, StallConns:
	default:
		errs.Add("existing", "must be %s, %s or %s, got %q", KeepConns, ResetConns, StallConns, ch.Existing)
	}
	if ch.For < 0 {
		errs.Add("for", "must not be negative, got %s", ch.For.D())
	}
	return to, errs.Err()
}

// switchState moves l to state to; with d > 0 it goes back after d.
func (e *Emulator) switchState(l *listener, to Profile, d time.Duration, existing, cause string) error {
	s := &l.st
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || e.ctx.Err() != nil {
		return ErrClosed
	}
	from := s.state
	if err := e.enter(l, to); err != nil {
		return fmt.Errorf("switching listener %s from %s to %s: %w", l.Name, from, to, err)
	}
	s.gen++
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	now := time.Now()
	s.since, s.until = now, time.Time{}
	if d > 0 {
		s.until = now.Add(d)
		gen := s.gen
		s.timer = time.AfterFunc(d, func() { e.revert(l, gen, from) })
	}
	affected := 0
	for c := range s.conns {
		switch existing {
		case ResetConns:
			c.reset()
			affected++
		case StallConns:
			c.stall()
			affected++
		default:
			c.unstall()
		}
	}
	ev := journal.ListenerEvent{Listener: l.Name, At: now, From: string(from), To: string(to),
		Existing: orKeep(existing), Affected: affected, Cause: cause}
	if d > 0 {
		ev.For = d.String()
	}
	e.journal.ListenerChanged(ev)
	e.log.Info("originemu listener state", "listener", l.Name, "from", from, "to", to, "for", d, "existing", orKeep(existing), "cause", cause)
	return nil
}

func orKeep(s string) string {
	if s == "" {
		return KeepConns
	}
	return s
}

// revert ends a change made with For, unless another change came since.
func (e *Emulator) revert(l *listener, gen uint64, to Profile) {
	l.st.mu.Lock()
	stale := l.st.gen != gen
	l.st.mu.Unlock()
	if stale {
		return
	}
	if err := e.switchState(l, to, 0, KeepConns, "timer"); err != nil && !errors.Is(err, ErrClosed) {
		e.log.Error("originemu: ending a timed listener state", "listener", l.Name, "err", err)
	}
}

// enter sets up the sockets of state to; l.st.mu is held.
func (e *Emulator) enter(l *listener, to Profile) error {
	s := &l.st
	if to.TLS() && s.tlsFor[to] == nil {
		lc := l.cfg
		lc.Profile = to
		cfg, err := e.tlsConfig(lc)
		if err != nil {
			return err
		}
		s.tlsFor[to] = cfg
	}
	switch to {
	case Refuse:
		s.closeSockets()
	case SYNDrop:
		s.closeSockets()
		syn, err := synDropSocket(e.ctx, l.Addr)
		if err != nil {
			return err
		}
		s.syn = syn
	default:
		if s.syn != nil {
			s.syn.close()
			s.syn = nil
		}
		if s.ln == nil {
			ln, err := listenShared(e.ctx, l.Addr)
			if err != nil {
				return err
			}
			s.ln = ln
			e.wg.Add(1)
			go e.acceptLoop(l, ln)
		}
	}
	s.state = to
	return nil
}

func (s *listenerState) closeSockets() {
	if s.ln != nil {
		s.ln.Close()
		s.ln = nil
	}
	if s.syn != nil {
		s.syn.close()
		s.syn = nil
	}
}

// stop closes every socket of the listener and releases stalled
// connections; no change is possible afterwards.
func (s *listenerState) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.closeSockets()
	if s.keeper != nil {
		s.keeper.close()
	}
	for c := range s.conns {
		c.unstall()
	}
}

// current is the state a new connection is handled in, and its TLS
// configuration if it has one.
func (s *listenerState) current() (Profile, *tls.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state, s.tlsFor[s.state]
}

func (s *listenerState) track(c *liveConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[c] = struct{}{}
}

func (s *listenerState) untrack(c *liveConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// info describes l now.
func (e *Emulator) info(l *listener) ListenerInfo {
	li := l.ListenerInfo
	l.st.mu.Lock()
	defer l.st.mu.Unlock()
	li.State, li.Since, li.Until = l.st.state, l.st.since, l.st.until
	if !l.st.shaping.IsZero() {
		sh := l.st.shaping
		li.Shaping = &sh
	}
	return li
}

// liveConn is an accepted connection a state change can reset or stall,
// shaped as its listener says. It is a net.Conn (not a *net.TCPConn, whose
// ReadFrom would bypass a stall or shaping) with the TCP methods the wire
// servers use.
type liveConn struct {
	net.Conn
	tcp       *net.TCPConn
	st        *listenerState
	mu        sync.Mutex
	stalled   chan struct{} // non-nil while stalled; closed to release
	closed    chan struct{}
	closeOnce sync.Once

	wmu     sync.Mutex // one shaped write at a time
	down    *pacer
	downGen uint64
	written int64
	rmu     sync.Mutex
	up      *pacer
	upGen   uint64
	capped  bool
	slowOne sync.Once
}

// slowClose waits the listener's slowClose, once per connection, before
// it is closed or shut down for writing.
func (c *liveConn) slowClose() {
	c.slowOne.Do(func() {
		if sh, _ := c.st.shape(); sh.SlowClose > 0 {
			c.sleep(sh.SlowClose.D())
		}
	})
}

func newLiveConn(c *net.TCPConn, st *listenerState) *liveConn {
	return &liveConn{Conn: c, tcp: c, st: st, closed: make(chan struct{})}
}

func (c *liveConn) stall() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stalled == nil {
		c.stalled = make(chan struct{})
	}
}

func (c *liveConn) unstall() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stalled != nil {
		close(c.stalled)
		c.stalled = nil
	}
}

func (c *liveConn) reset() {
	_ = c.SetLinger(0)
	_ = c.Conn.Close() // at once, whatever the shaping says
	c.closeOnce.Do(func() { close(c.closed) })
}

// wait blocks while the connection is stalled.
func (c *liveConn) wait() error {
	c.mu.Lock()
	ch := c.stalled
	c.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-c.closed:
		return net.ErrClosed
	}
}

// sleep waits d; false if the connection or the emulator closed first.
func (c *liveConn) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.closed:
		return false
	case <-c.st.done:
		return false
	}
}

func (c *liveConn) Read(p []byte) (int, error) {
	if err := c.wait(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	sh, gen := c.st.shape()
	if n > 0 && (sh.UpLatency > 0 || sh.UpBandwidth > 0) {
		c.rmu.Lock()
		if c.up == nil || c.upGen != gen {
			c.up, c.upGen = newPacer(rules.Shaping{Latency: sh.UpLatency, Jitter: sh.Jitter, Seed: sh.Seed ^ 1}, sh.UpBandwidth), gen
		}
		ok := c.up.read(n, c.sleep)
		c.rmu.Unlock()
		if !ok && err == nil {
			err = net.ErrClosed
		}
	}
	return n, err
}

func (c *liveConn) Write(p []byte) (int, error) {
	if err := c.wait(); err != nil {
		return 0, err
	}
	sh, gen := c.st.shape()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if sh.IsZero() {
		return c.capped1(p, 0)
	}
	if c.down == nil || c.downGen != gen {
		c.down, c.downGen = newPacer(sh, sh.Bandwidth), gen
	}
	return c.down.write(p, func(b []byte) (int, error) { return c.capped1(b, sh.ByteCap) }, c.sleep)
}

// errByteCap ends writing on a connection that reached its byte cap.
var errByteCap = errors.New("originemu: connection byte cap reached")

// capped1 writes b, but no byte past limit bytes on the connection
// (0 = no limit); reaching the limit closes the connection.
func (c *liveConn) capped1(b []byte, limit int64) (int, error) {
	if c.capped {
		return 0, errByteCap
	}
	if limit > 0 && c.written+int64(len(b)) >= limit {
		n, err := c.Conn.Write(b[:limit-c.written])
		c.written += int64(n)
		c.capped = true
		_ = c.Close()
		if err == nil {
			err = errByteCap
		}
		return n, err
	}
	n, err := c.Conn.Write(b)
	c.written += int64(n)
	return n, err
}

// Close closes the connection, after the listener's slowClose if any.
func (c *liveConn) Close() error {
	c.slowClose()
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// SetLinger is the TCP connection's (wire.ResetConn uses it).
func (c *liveConn) SetLinger(sec int) error { return c.tcp.SetLinger(sec) }

// CloseWrite is the TCP connection's (a FIN, as the h2 server's GOAWAY
// linger uses it).
func (c *liveConn) CloseWrite() error {
	c.slowClose()
	return c.tcp.CloseWrite()
}
