package session

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/entry"
	"github.com/edgeconform/edgeconform/reference/cache/policy"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/outcome"
)

// Cache is a node's cache path: its store, its fills in flight and the
// name it gives itself in Cache-Status.
type Cache struct {
	store store.Store
	group *collapse.Group
	name  string
	hit   string // this cache's Cache-Status member for a hit, made once
	log   *slog.Logger
	bufs  sync.Pool // *[]byte copy buffers for fills
}

// New is the cache path over st, collapsing fills in g, naming itself
// name in Cache-Status (RFC 9211) and logging to log.
func New(st store.Store, g *collapse.Group, name string, log *slog.Logger) *Cache {
	return &Cache{store: st, group: g, name: name, hit: name + "; hit", log: log}
}

// Upstream sends one request's fills to the parent tier.
type Upstream interface {
	// Header is the client's header prepared for the parent (less
	// hop-by-hop fields). The session never changes it: each fill sends
	// a copy, less the Range and conditional fields (the cache answers
	// those itself), with its own Range.
	Header() http.Header
	// Fetch sends a bodiless GET with header h.
	Fetch(ctx context.Context, h http.Header) *fetch.Result
}

// Request is what edge asks the cache.
type Request struct {
	HTTP   *http.Request  // the client's GET or HEAD
	Policy *policy.Policy // the route's cdnPolicy (not BYPASS_CACHE); never modified
	Key    string         // Policy.Key(HTTP) (CCH-6)
	ID     string         // the request's id: its fills are logged with it (LOG-1)
	// Upstream is where the request's fills go. Its Header is asked for
	// only when a fill is needed, from the request's goroutine or a
	// fill's.
	Upstream Upstream
}

// Kind is what an Answer tells edge to do.
type Kind int

const (
	// Bypass: take the uncached path (a HEAD miss, a follower of a fill
	// whose response is not for sharing, ...). Nothing was sent.
	Bypass Kind = iota
	// Gone: the client went away; nothing to send.
	Gone
	// Failed: the fill or the first chunk failed before anything was
	// sent (Err, What): answer it with a 502/503/504.
	Failed
	// Synthesized: answer Status with Reason (and Detail for the log).
	Synthesized
	// Ranged: a 200 of Body (size known) through http.ServeContent, which
	// answers the client's ranges and conditionals (RNG-3).
	Ranged
	// Stored: Status, Header and Body as stored (Size, when >= 0, is the
	// Content-Length).
	Stored
	// Live: a fill's response as it arrives: the head only once the body
	// produced its first byte (a body failing before it is a 502/504).
	Live
)

// Answer is the cache's answer to one Request. For Ranged, Stored and
// Live the caller must Close it when done; the others come released.
type Answer struct {
	Kind Kind
	// Cache is the log record's cache_status ("hit", "miss",
	// "revalidated", "collapsed"), Member this cache's Cache-Status
	// member, FillID the request that led the fill a follower joined, and
	// Result the fill's fetch when this request led it (for the log).
	Cache, Member, FillID string
	Result                *fetch.Result

	Status     int
	Header     http.Header // stored or the origin's, less hop-by-hop fields
	ClientCC   string      // the Cache-Control the client gets (clientTtl), if set
	Age        string      // the Age field of a hit
	Size       int64       // -1: unknown
	Body       io.ReadSeeker
	Unstorable string // why a child tier must not store it (shield.UncacheableHeader)
	// Memo is the stored entry's memo on a fresh hit (entry.Memo: the
	// edge keeps the fields it renders for the entry there), else nil.
	Memo *entry.Memo

	Err    error  // Failed
	What   string // Failed: what was being done
	Reason outcome.Reason
	Detail string // Synthesized

	s *session
}

// Close releases the entry, the fill attachments and readers behind a.
func (a *Answer) Close() {
	if a.s != nil {
		a.s.release()
	}
}

// Lookup runs r through the states from lookup to an answer.
func (c *Cache) Lookup(r Request) *Answer { return c.LookupIn(r, new(Room)) }

// Room holds the state of one lookup. A caller that allocates memory of
// its own for each request can keep a Room there and pass it to
// LookupIn, one allocation fewer per request than Lookup (issue #14). A
// Room serves one lookup; its zero value is ready for it.
type Room struct{ s session }

// LookupIn is Lookup with the lookup's state in room, which must stay
// untouched until the Answer is closed.
func (c *Cache) LookupIn(r Request, room *Room) *Answer {
	s := &room.s
	*s = session{c: c, req: r}
	s.a.Size = -1
	for st := step(stpLookup); st != nil; {
		st = st(s)
	}
	switch s.a.Kind {
	case Ranged, Stored, Live:
		s.a.s = s
	default:
		s.release()
	}
	return &s.a
}

// attach keeps the client of ctx attached to the fill res until the client
// goes away or the returned function is called.
func attach(ctx context.Context, res *collapse.Result) (detach func()) {
	stop := context.AfterFunc(ctx, res.Detach)
	return func() {
		stop()
		res.Detach()
	}
}

// copyBufferSize is the size of the buffers fills copy through.
const copyBufferSize = 32 << 10

func (c *Cache) buffer() *[]byte {
	if b, ok := c.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, copyBufferSize)
	return &b
}
