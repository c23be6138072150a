// Package edge is the reference edge cache's client-facing HTTP handler. A
// request goes through named steps, Varnish-style:
//
//	receive -> route -> (redirect at the edge
//	                    | cache: package cache/session's states   (cache.go)
//	                    | fetch, uncached) -> deliver -> log
//
// Routing is package routing; the cache path (lookup, revalidate, fill,
// join: named states that answer with one head and one io.ReadSeeker over
// stored or arriving bytes) is package cache/session, over cache/entry
// (the storage format), cache/policy (HTTP cache semantics), cache/store
// and cache/collapse; edge delivers what it answers. The origin attempt
// loop (retries, failover, timeouts, redirects) is package fetch, or, for a
// node with a parent tier, package shield, both behind the parent interface
// (parent.go) and both reporting package outcome's typed outcomes. Which
// responses are shared with collapsed followers and which are stored are
// cache/policy's decisions (share.go). A node is assembled by package node.
// This package joins them, streams
// the body to the client, truncates it visibly when the origin's body fails
// (TMO-6), and logs one record per client request (LOG-1/LOG-2).
package edge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/policy"
	"github.com/edgeconform/edgeconform/reference/cache/session"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/headervars"
	"github.com/edgeconform/edgeconform/reference/receive"
	"github.com/edgeconform/edgeconform/reference/routing"
	"github.com/edgeconform/edgeconform/reference/shield"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// Server answers clients.
type Server struct {
	router  *routing.Router
	log     *slog.Logger
	metrics *Metrics
	ids     atomic.Uint64
	idBase  string
	bufs    sync.Pool // *[]byte copy buffers for deliver

	store    store.Store     // cached objects
	group    *collapse.Group // concurrent fills of one key (COL-1)
	cache    *session.Cache  // the cache path over store and group (cache.go)
	policies sync.Map        // *config.RouteRule -> *policy.Policy

	name    string            // this node's name in Cache-Status (RFC 9211)
	bypass  string            // its Cache-Status member for a request the cache passes by (once, not per request)
	origins parent            // the origins, through the fetch engine (parent.go)
	parents map[string]parent // origin name -> its shield node (SHD-1); absent: s.origins
	shield  *shield.Client    // nil without parents

	limits receive.Limits  // the receive step's (receive.go)
	geo    *headervars.Geo // client geography for header variables (headers.go)
}

// New builds a server for a validated configuration (with its secrets
// resolved, if it has awsV4Authentication origins: config.Options.Secrets).
// metrics may be nil. Close releases the cache and stops running fills.
func New(cfg *config.Config, client *upstream.Client, log *slog.Logger, metrics *Metrics, opts ...Option) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	st := o.store
	if st == nil {
		st = store.NewMemory(DefaultStoreBytes)
	}
	router, err := routing.New(cfg.Service)
	if err != nil {
		return nil, fmt.Errorf("compiling routes: %w", err)
	}
	name := o.name
	if name == "" {
		name = DefaultName
	}
	origins := make(map[string]config.EffectiveOrigin, len(cfg.Origins))
	parents := map[string]parent{}
	var sc *shield.Client
	for _, org := range cfg.Origins {
		origins[org.Name] = cfg.Effective(org)
		if u := o.shields.For(org); u != nil {
			if sc == nil {
				sc = shield.NewClient(log)
			}
			parents[org.Name] = shieldParent{client: sc, base: u, tier: name}
		}
	}
	group := newGroup(o.maxFills)
	return &Server{
		name:    name,
		bypass:  name + "; fwd=bypass",
		origins: originParent{fetch.New(client, origins, log, o.fetch...)},
		parents: parents,
		shield:  sc,
		router:  router,
		log:     log,
		metrics: metrics,
		idBase:  strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
		store:   st,
		group:   group,
		cache:   session.New(st, group, name, log),
		limits:  o.receiveLimits(),
		geo:     o.geo,
	}, nil
}

// Close stops running fills (their clients see truncated bodies) and
// releases the cache's storage. Call it after the HTTP server has shut
// down.
func (s *Server) Close() {
	s.group.Close()
	if c, ok := s.store.(io.Closer); ok {
		if err := c.Close(); err != nil {
			s.log.Warn("closing the cache store", "err", err)
		}
	}
	if s.shield != nil {
		s.shield.Close()
	}
}

// visit is one client request on its way through the steps.
type visit struct {
	id      string
	start   time.Time
	w       http.ResponseWriter
	r       *http.Request
	route   *routing.Result
	result  *fetch.Result
	status  int
	bytes   int64
	trunc   string // why the body was cut short, if it was
	errText string
	logged  bool
	// cache is the log record's cache_status: "hit", "miss", "collapsed"
	// or "bypass" (the default); cacheHdr the Cache-Status member this
	// cache adds (RFC 9211), if any.
	cache    string
	cacheHdr string
	fillID   string // a collapsed request's fill: the leader's request_id (LOG-1)
	cacheKey string // the cache key, for routes that cache
	keyPrint string // cacheKey's fingerprint when already known (rendered.go)
}

// ServeHTTP runs a request through receive, route, fetch, deliver and log.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	v := &visit{id: s.nextID(), start: time.Now(), w: w, r: r}
	defer s.logVisit(v)
	if s.refuse(v) { // receive: framing, head limits, Host (receive.go)
		return
	}
	route, rerr := s.router.Route(r) // route: MTH-1..MTH-7
	if rerr != nil {
		s.deny(v, rerr)
		return
	}
	v.route = route
	if route.Redirect != nil {
		w.Header().Set("Location", route.Redirect.Location)
		v.status = route.Redirect.Status
		w.WriteHeader(v.status)
		return
	}
	if s.serveCached(v) {
		return
	}
	if v.cacheHdr == "" {
		v.cacheHdr = s.bypass
	}
	v.result = s.fetchUpstream(r.Context(), s.upstreamRequest(v))
	if policy.Invalidates(r.Method, v.result.Status) { // CCH-7
		s.store.Delete(s.policyFor(route.Rule).Key(r))
	}
	s.deliver(v)
}

// nextID is a new request id: idBase, "-" and a sequence number (LOG-1),
// made in one allocation.
func (s *Server) nextID() string {
	var room [32]byte
	b := append(append(room[:0], s.idBase...), '-')
	return string(strconv.AppendUint(b, s.ids.Add(1), 10))
}

// deny answers a request routing refused (400, 404, 405).
func (s *Server) deny(v *visit, rerr *routing.Error) {
	if rerr.Status == http.StatusMethodNotAllowed && len(rerr.Allow) > 0 {
		v.w.Header().Set("Allow", strings.Join(rerr.Allow, ", "))
	}
	v.status = rerr.Status
	v.errText = rerr.Reason
	http.Error(v.w, rerr.Reason, rerr.Status)
}

// deliver sends the chosen response, or the synthesized 502/504, to the
// client. A body that fails midway is truncated so the client can tell:
// the handler aborts, which closes an HTTP/1.1 connection short of its
// Content-Length or final chunk and resets an h2 stream (TMO-6).
func (s *Server) deliver(v *visit) {
	res := v.result
	if res.Response == nil {
		s.synthesize(v, res.Status, res.Reason, "") // errors.go
		return
	}
	resp := res.Response
	defer resp.Body.Close()
	h := v.w.Header()
	originFields(h, resp.Header)
	s.applyResponseHeaders(h, v) // headers.go
	if v.cacheHdr != "" {
		h.Add("Cache-Status", v.cacheHdr)
	}
	if resp.ContentLength >= 0 && v.r.Method != http.MethodHead && !declares(h, resp.ContentLength) {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	writeHead := func() {
		v.status = resp.StatusCode
		v.w.WriteHeader(resp.StatusCode)
	}
	if v.r.Method == http.MethodHead {
		writeHead()
		return
	}
	s.sendAfterFirstByte(v, resp.Body, writeHead) // errors.go: a body failing at byte 0 is a 502/504
}

// originFields copies the origin's fields src into h and then drops the
// hop-by-hop ones from h (upstream.RemoveHopByHop).
func originFields(h, src http.Header) {
	if len(h) > 0 || namesOthers(src) {
		copyHeader(h, src)
		upstream.RemoveHopByHop(h)
		return
	}
	// Nothing to delete afterwards (issue #14: nine map deletes per
	// response): h is empty, the fixed hop-by-hop fields are not copied,
	// and no Connection field names another one src has.
	copyHeaderExcept(h, src, upstream.IsHopByHop)
}

// namesOthers reports whether a Connection field of src names a field src
// has other than the fixed hop-by-hop ones ("Connection: keep-alive", as
// origins send it, names none).
func namesOthers(src http.Header) bool {
	for _, v := range src["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name == "" {
				continue
			}
			k := textproto.CanonicalMIMEHeaderKey(name)
			if _, ok := src[k]; ok && !upstream.IsHopByHop(k) {
				return true
			}
		}
	}
	return false
}

// declares reports whether h's Content-Length is exactly n already, one
// value of digits without leading zeros (the origin's, as copied), so
// that it need not be set again (issue #14: two allocations a response).
func declares(h http.Header, n int64) bool {
	vals := h["Content-Length"]
	if len(vals) != 1 || vals[0] == "" || vals[0][0] < '0' || vals[0][0] > '9' || len(vals[0]) > 1 && vals[0][0] == '0' {
		return false // none, several, a sign or leading zeros: set it plainly
	}
	m, err := strconv.ParseInt(vals[0], 10, 64)
	return err == nil && m == n
}

// copyHeader copies src's fields into dst with one allocation for all the
// values (issue #14: one per field before); each field's slice is capped,
// so an Add to one never overwrites the next.
func copyHeader(dst, src http.Header) { copyHeaderExcept(dst, src, nil) }

// copyHeaderExcept is copyHeader without the fields skip (if not nil)
// reports true for.
func copyHeaderExcept(dst, src http.Header, skip func(string) bool) {
	n := 0
	for k, vals := range src {
		if skip == nil || !skip(k) {
			n += len(vals)
		}
	}
	all := make([]string, n)
	for k, vals := range src {
		if skip != nil && skip(k) {
			continue
		}
		m := copy(all, vals)
		dst[k] = all[:m:m]
		all = all[m:]
	}
}

// sendBody streams body to the client, truncating visibly (TMO-6) when it
// fails.
func (s *Server) sendBody(v *visit, body io.Reader) {
	src := s.sourceOf(body)
	defer src.done()
	s.streamBody(v, &src, nil, nil)
}

// viewer is a body that hands out its bytes without a copy: fetch's origin
// bodies over HTTP/1.1 of a known length (or up to the close), as views
// of the origin connection's buffer, each valid until the next call.
type viewer interface {
	Viewable() bool
	Next(max int) ([]byte, error)
}

// source is how a body's bytes are taken: as views when it offers them
// (issue #14: a 64 KiB origin body was copied whole from the connection's
// buffer into ours), else read through a buffer from the pool.
type source struct {
	s    *Server
	view viewer
	body io.Reader
	buf  *[]byte
}

func (s *Server) sourceOf(body io.Reader) source {
	if vb, ok := body.(viewer); ok && vb.Viewable() {
		return source{view: vb}
	}
	return source{s: s, body: body, buf: s.buffer()}
}

// next returns the body's next bytes, valid until the next call.
func (src *source) next() ([]byte, error) {
	if src.view != nil {
		return src.view.Next(copyBufferSize)
	}
	n, err := src.body.Read(*src.buf)
	return (*src.buf)[:n], err
}

// done gives the buffer back, if one was taken.
func (src *source) done() {
	if src.buf != nil {
		src.s.bufs.Put(src.buf)
		src.buf = nil
	}
}

// streamBody is sendBody from src, whose first bytes (taken already, with
// rerr) go first.
func (s *Server) streamBody(v *visit, src *source, first []byte, rerr error) {
	n, err := copyFlushing(v.w, src, first, rerr)
	v.bytes = n
	if err != nil {
		v.trunc = truncReason(err)
		s.logVisit(v)
		v.logged = true
		panic(http.ErrAbortHandler) // truncate visibly; net/http closes or resets
	}
}

func truncReason(err error) string {
	switch {
	case errors.Is(err, fetch.ErrReadTimeout):
		return "read_timeout"
	case errors.Is(err, fetch.ErrResponseTimeout):
		return "response_timeout"
	case errors.Is(err, context.Canceled):
		return "client_gone"
	}
	return "origin_error: " + err.Error()
}

// copyBufferSize is the size of the buffers bodies are copied through.
const copyBufferSize = 64 << 10

func (s *Server) buffer() *[]byte {
	if b, ok := s.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, copyBufferSize)
	return &b
}

// copyFlushing streams src's bytes to the client, flushing after each
// take so that a slow origin body reaches the client as it arrives; p,
// taken already with rerr, goes first. Each p is written before the next
// is taken (a view is valid until then). Only read errors are returned
// as errors; a client that went away ends the copy too.
func copyFlushing(w http.ResponseWriter, src *source, p []byte, rerr error) (int64, error) {
	rc := http.NewResponseController(w)
	var n int64
	for {
		if len(p) > 0 {
			if _, werr := w.Write(p); werr != nil {
				return n, context.Canceled
			}
			n += int64(len(p))
			_ = rc.Flush()
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
		p, rerr = src.next()
	}
}
