// Package journal records what an emulated origin received: every connection
// and every request, with how each ended. It is bounded (a ring per record
// kind), safe for concurrent use, and can be queried or waited on, so tests
// decide on evidence from the origin instead of sleeping.
package journal

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/emulators/fault"
	"github.com/edgeconform/edgeconform/emulators/wire"
)

// DefaultCapacity is the number of connections and of requests kept when
// New is given a capacity of 0 or less.
const DefaultCapacity = 10000

// Conn is one accepted (or refused) connection.
type Conn struct {
	ID          uint64    `json:"id"`
	Listener    string    `json:"listener"`
	State       string    `json:"state,omitempty"` // the listener's state (profile) when it arrived
	Peer        string    `json:"peer"`
	Local       string    `json:"local"`
	SNI         string    `json:"sni,omitempty"`
	OfferedALPN []string  `json:"offeredAlpn,omitempty"`
	ALPN        string    `json:"alpn,omitempty"`
	TLSVersion  string    `json:"tlsVersion,omitempty"`
	Opened      time.Time `json:"opened"`
	Closed      time.Time `json:"closed,omitzero"`
	CloseReason string    `json:"closeReason,omitempty"`
}

// How a request's exchange ended: the names of package fault's Ends (the
// field stays a plain string, so JSON and callers comparing with string
// literals are unchanged).
const (
	EndPending    = string(fault.Pending)    // still running
	EndComplete   = string(fault.Complete)   // the whole response was sent
	EndTruncated  = string(fault.Truncated)  // connection closed short of the declared body
	EndReset      = string(fault.Reset)      // TCP reset by a rule
	EndRSTStream  = string(fault.RSTStream)  // h2 RST_STREAM by a rule
	EndGoAway     = string(fault.GoAway)     // h2 GOAWAY by a rule
	EndStalled    = string(fault.Stalled)    // a stall rule held the connection until the client went
	EndClientGone = string(fault.ClientGone) // the client went away first
	EndError      = string(fault.Error)      // writing to the client failed, or a rule could not run
)

// Request is one request and what the emulator did with it.
type Request struct {
	Seq       uint64             `json:"seq"`
	ConnID    uint64             `json:"connId"`
	Listener  string             `json:"listener"`
	Proto     string             `json:"proto"`
	StreamID  uint32             `json:"streamId,omitempty"`
	Method    string             `json:"method"`
	URI       string             `json:"uri"`
	Path      string             `json:"path"`
	Host      string             `json:"host"`
	Headers   []wire.HeaderField `json:"headers"`
	Range     string             `json:"range,omitempty"`
	Arrived   time.Time          `json:"arrived"`
	Rule      string             `json:"rule,omitempty"` // id of the rule that fired, or "path" for a path-encoded rule
	Status    int                `json:"status,omitempty"`
	BodyBytes int64              `json:"bodyBytes"`
	End       string             `json:"end"`
	Ended     time.Time          `json:"ended,omitzero"`
	Note      string             `json:"note,omitempty"`
	// Upstream is what a proxy backend's upstream answered.
	Upstream *Upstream `json:"upstream,omitempty"`
}

// ListenerEvent is a change of a listener's state at runtime: what it did
// before and after, when, and what happened to its open connections.
type ListenerEvent struct {
	Seq      uint64    `json:"seq"`
	Listener string    `json:"listener"`
	At       time.Time `json:"at"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	// For is how long the new state lasts ("" until changed again); the
	// change back is an event of its own, Cause "timer".
	For string `json:"for,omitempty"`
	// Existing is what happened to the open connections: keep, reset or
	// stall; Affected is how many were reset or stalled.
	Existing string `json:"existing,omitempty"`
	Affected int    `json:"affected,omitempty"`
	Cause    string `json:"cause"` // "api" (a call), "timer" (a For ran out)
	Note     string `json:"note,omitempty"`
}

// Query selects records. Zero fields select everything.
type Query struct {
	Listener   string // only this listener
	PathPrefix string // only requests whose path starts with this
	Method     string // only this method
	AfterSeq   uint64 // only requests with a larger Seq
	Limit      int    // at most this many requests, oldest first; 0 = all kept
}

// Matches reports whether r is selected by q (ignoring Limit).
func (q Query) Matches(r *Request) bool {
	return (q.Listener == "" || r.Listener == q.Listener) &&
		(q.PathPrefix == "" || strings.HasPrefix(r.Path, q.PathPrefix)) &&
		(q.Method == "" || r.Method == q.Method) &&
		r.Seq > q.AfterSeq
}

// Snapshot is the answer to a query.
type Snapshot struct {
	// Requests selected, oldest first.
	Requests []Request `json:"requests"`
	// Conns are the connections of the selected listener; with a
	// PathPrefix, only those that carried a selected request.
	Conns []Conn `json:"conns"`
	// Events are the listener state changes (of the selected listener),
	// oldest first.
	Events []ListenerEvent `json:"events"`
	// Dropped counts records pushed out of the rings since the last reset.
	Dropped uint64 `json:"dropped"`
}

// Journal is the bounded record store.
type Journal struct {
	mu       sync.Mutex
	capacity int
	conns    ring[Conn]
	reqs     ring[Request]
	events   ring[ListenerEvent]
	eventSeq uint64
	nextSeq  uint64
	dropped  uint64
	changed  chan struct{} // closed and replaced on every change
}

// New returns a journal keeping at most capacity connections and capacity
// requests (DefaultCapacity if capacity <= 0).
func New(capacity int) *Journal {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Journal{
		capacity: capacity,
		conns:    newRing[Conn](capacity),
		reqs:     newRing[Request](capacity),
		events:   newRing[ListenerEvent](capacity),
		changed:  make(chan struct{}),
	}
}

// ListenerChanged records a listener's state change and returns its
// sequence number.
func (j *Journal) ListenerChanged(ev ListenerEvent) uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.eventSeq++
	ev.Seq = j.eventSeq
	if j.events.push(ev) {
		j.dropped++
	}
	j.notifyLocked()
	return ev.Seq
}

// Events returns the listener state changes of listener ("" for all),
// oldest first.
func (j *Journal) Events(listener string) []ListenerEvent {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.eventsLocked(listener)
}

func (j *Journal) eventsLocked(listener string) []ListenerEvent {
	out := []ListenerEvent{}
	j.events.each(func(e *ListenerEvent) bool {
		if listener == "" || e.Listener == listener {
			out = append(out, *e)
		}
		return true
	})
	return out
}

// WaitEvents blocks until at least n state changes of listener ("" for
// all) are recorded and returns them, or ctx's error with those so far.
func (j *Journal) WaitEvents(ctx context.Context, listener string, n int) ([]ListenerEvent, error) {
	return waitFor(ctx, j, func() []ListenerEvent { return j.eventsLocked(listener) },
		func(evs []ListenerEvent) bool { return len(evs) >= n })
}

// waitFor re-reads get (under j.mu) on every change until done says yes,
// or ctx ends (then with what get read last).
func waitFor[T any](ctx context.Context, j *Journal, get func() T, done func(T) bool) (T, error) {
	for {
		j.mu.Lock()
		v := get()
		ch := j.changed
		j.mu.Unlock()
		if done(v) {
			return v, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return v, ctx.Err()
		}
	}
}

// Capacity is the bound per record kind.
func (j *Journal) Capacity() int { return j.capacity }

func (j *Journal) notifyLocked() {
	close(j.changed)
	j.changed = make(chan struct{})
}

// OpenConn records a new connection.
func (j *Journal) OpenConn(c Conn) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.conns.push(c) {
		j.dropped++
	}
	j.notifyLocked()
}

// CloseConn records how connection id ended.
func (j *Journal) CloseConn(id uint64, reason string, at time.Time) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if c := j.conns.find(func(c *Conn) bool { return c.ID == id }); c != nil {
		c.Closed, c.CloseReason = at, reason
	}
	j.notifyLocked()
}

// Begin records a request that has arrived and returns its sequence number.
func (j *Journal) Begin(r Request) uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.nextSeq++
	r.Seq = j.nextSeq
	if j.reqs.push(r) {
		j.dropped++
	}
	j.notifyLocked()
	return r.Seq
}

// Update changes the request with sequence seq, if it is still kept.
func (j *Journal) Update(seq uint64, change func(*Request)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if r := j.reqs.find(func(r *Request) bool { return r.Seq == seq }); r != nil {
		change(r)
	}
	j.notifyLocked()
}

// Query returns the records q selects.
func (j *Journal) Query(q Query) Snapshot {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.queryLocked(q)
}

func (j *Journal) queryLocked(q Query) Snapshot {
	s := Snapshot{Requests: []Request{}, Conns: []Conn{}, Events: j.eventsLocked(q.Listener), Dropped: j.dropped}
	used := map[uint64]bool{}
	j.reqs.each(func(r *Request) bool {
		if !q.Matches(r) {
			return true
		}
		c := *r
		c.Headers = append([]wire.HeaderField(nil), r.Headers...)
		if r.Upstream != nil {
			u := *r.Upstream
			u.Headers = append([]wire.HeaderField(nil), u.Headers...)
			c.Upstream = &u
		}
		s.Requests = append(s.Requests, c)
		used[r.ConnID] = true
		return q.Limit <= 0 || len(s.Requests) < q.Limit
	})
	j.conns.each(func(c *Conn) bool {
		if (q.Listener == "" || c.Listener == q.Listener) && (q.PathPrefix == "" || used[c.ID]) {
			cc := *c
			cc.OfferedALPN = append([]string(nil), c.OfferedALPN...)
			s.Conns = append(s.Conns, cc)
		}
		return true
	})
	return s
}

// WaitRequests blocks until at least n requests match q (ignoring q.Limit)
// and returns them, or returns ctx's error with what matched so far.
func (j *Journal) WaitRequests(ctx context.Context, q Query, n int) ([]Request, error) {
	return j.wait(ctx, q, func(s Snapshot) bool { return len(s.Requests) >= n })
}

// WaitEnded blocks until at least n requests match q and have ended (End is
// not EndPending).
func (j *Journal) WaitEnded(ctx context.Context, q Query, n int) ([]Request, error) {
	return j.wait(ctx, q, func(s Snapshot) bool {
		ended := 0
		for _, r := range s.Requests {
			if r.End != EndPending {
				ended++
			}
		}
		return ended >= n
	})
}

// WaitConns blocks until at least n connections selected by q satisfy
// match (nil matches all) and returns those that do. Connections are
// journaled once what is known of them is known (after a TLS handshake).
func (j *Journal) WaitConns(ctx context.Context, q Query, n int, match func(*Conn) bool) ([]Conn, error) {
	var got []Conn
	_, err := j.wait(ctx, q, func(s Snapshot) bool {
		got = got[:0]
		for i := range s.Conns {
			if match == nil || match(&s.Conns[i]) {
				got = append(got, s.Conns[i])
			}
		}
		return len(got) >= n
	})
	return got, err
}

func (j *Journal) wait(ctx context.Context, q Query, done func(Snapshot) bool) ([]Request, error) {
	q.Limit = 0
	s, err := waitFor(ctx, j, func() Snapshot { return j.queryLocked(q) }, done)
	return s.Requests, err
}

// Reset forgets every record. Sequence numbers keep growing, so a waiter's
// AfterSeq stays meaningful.
func (j *Journal) Reset() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.conns = newRing[Conn](j.capacity)
	j.reqs = newRing[Request](j.capacity)
	j.events = newRing[ListenerEvent](j.capacity)
	j.dropped = 0
	j.notifyLocked()
}

// ring is a fixed-size FIFO that overwrites its oldest element.
type ring[T any] struct {
	buf   []T
	start int
	n     int
}

func newRing[T any](capacity int) ring[T] { return ring[T]{buf: make([]T, capacity)} }

// push appends v and reports whether the oldest element was dropped.
func (r *ring[T]) push(v T) bool {
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = v
		r.n++
		return false
	}
	r.buf[r.start] = v
	r.start = (r.start + 1) % len(r.buf)
	return true
}

// each calls f on the elements oldest first until f returns false.
func (r *ring[T]) each(f func(*T) bool) {
	for i := 0; i < r.n; i++ {
		if !f(&r.buf[(r.start+i)%len(r.buf)]) {
			return
		}
	}
}

// find returns the newest element for which match is true, or nil.
func (r *ring[T]) find(match func(*T) bool) *T {
	for i := r.n - 1; i >= 0; i-- {
		if e := &r.buf[(r.start+i)%len(r.buf)]; match(e) {
			return e
		}
	}
	return nil
}

// hookKey[T] is the context key of a func(T) that code serving a request
// calls to add to its journal record.
type hookKey[T any] struct{}

func withHook[T any](ctx context.Context, f func(T)) context.Context {
	return context.WithValue(ctx, hookKey[T]{}, f)
}

func callHook[T any](ctx context.Context, v T) {
	if f, ok := ctx.Value(hookKey[T]{}).(func(T)); ok {
		f(v)
	}
}

// WithAnnotator returns a context whose Annotate calls reach note: the
// emulator gives each request's handler such a context, so code serving the
// request (a bucket backend, say) can add to its journal record.
func WithAnnotator(ctx context.Context, note func(string)) context.Context {
	return withHook(ctx, note)
}

// Annotate adds a note to the journal record of the request ctx belongs to
// (for example "sigv4: SignatureDoesNotMatch"); without an annotator it
// does nothing.
func Annotate(ctx context.Context, note string) { callHook(ctx, note) }

// Upstream is what a proxy backend's upstream answered for a request.
type Upstream struct {
	URL     string             `json:"url"`
	Host    string             `json:"host"`
	Status  int                `json:"status,omitempty"`
	Headers []wire.HeaderField `json:"headers,omitempty"` // sorted by name
	Error   string             `json:"error,omitempty"`   // no answer: why
}

// WithUpstreamRecorder returns a context whose RecordUpstream calls reach
// record (the emulator gives one to each request's handler).
func WithUpstreamRecorder(ctx context.Context, record func(Upstream)) context.Context {
	return withHook(ctx, record)
}

// RecordUpstream sets the upstream answer on the journal record of the
// request ctx belongs to; without a recorder it does nothing.
func RecordUpstream(ctx context.Context, u Upstream) { callHook(ctx, u) }
