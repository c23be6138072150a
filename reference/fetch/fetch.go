// Package fetch is the reference edge cache's origin fetch engine: the
// attempt loop that turns one client request into origin attempts (retries,
// failover, redirect following, timeouts) and returns the one response the
// client gets, or the 502/504 it gets instead (behaviour.md ATT, TMO, RDR,
// HST, PRT-5, LOG).
//
// The loop is small, Pingora-style: plan the next step (another attempt to
// some target, or a final answer), try one attempt through package
// upstream, judge its outcome, repeat.
//
//	for {
//		step := f.plan()        // next target, or the end (ATT-3, ATT-4, ATT-9, RDR-2, RDR-5)
//		if step.done {
//			break
//		}
//		out := f.try(ctx, step) // one attempt, bounded by connectTimeout and the deadline (TMO-1, TMO-7)
//		if f.judge(out) {       // usable, retry, failover, redirect, or a final 502/504 (ATT-2, ATT-5..8, RDR-1..6)
//			break
//		}
//	}
//
// Once a response is chosen, connectTimeout and maxAttemptsTimeout no longer
// apply (TMO-3): the response's body is read under the readTimeout and
// responseTimeout of the origin that answered (TMO-5, TMO-6), and a body cut
// short by a timeout or by the origin reads as an error, never as io.EOF.
//
// Interpretations (INT) beyond behaviour.md:
//
//   - A failure that matches none of the current origin's retry conditions
//     ends the chain: a status is returned as is (ATT-6); a connect failure
//     when CONNECT_FAILURE is not listed gives 502 at once, without failover.
//   - A retry after a followed redirect goes to the same (redirected) target,
//     under the same origin; a failover starts from the failover origin's
//     own address.
//   - A followed redirect counts against the maxAttempts of the origin that
//     returned it (RDR-2), so with maxAttempts 1 a listed redirect cannot be
//     followed and the client gets 502 (RDR-5).
//   - Redirects go to the Location host with the protocol of the origin
//     that returned them, whatever the Location's scheme; a relative
//     Location stays on the current target (same dial address, port and
//     Host) and is always allowed by the RDR-6 allow-list.
//   - A malformed origin response (http_protocol_error) is not a connect
//     failure: it ends the chain with 502 (ATT-8).
//   - A safe method with a request body (OPTIONS) has the body buffered up
//     to 1 MiB so it can be resent; a larger one is sent once, like an
//     unsafe method's, and then not retried.
//   - readTimeout counts while the fetch waits for the origin: from the
//     headers to the first body byte, then during each Body.Read, so a slow
//     reader of Body does not count against the origin. Its timer runs only
//     for a Read that may wait (an HTTP/1.1 body says when bytes are
//     buffered), and responseTimeout's only while declared bytes are still
//     to come: a small response read with its head arms neither.
package fetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/logjson"
	"github.com/edgeconform/edgeconform/reference/outcome"
	"github.com/edgeconform/edgeconform/reference/requri"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// MaxAttempts is the cap on origin attempts per client request across all
// origins, failovers and followed redirects (ATT-4).
const MaxAttempts = 4

// maxBufferedBody bounds how much of a safe method's request body is kept
// to resend it on a retry.
const maxBufferedBody = 1 << 20

// Request is the client request as it goes to the origins.
type Request struct {
	Method       string
	PathAndQuery string // after rewrites
	// Header holds the client's headers after the route's headerAction,
	// with hop-by-hop headers and TE removed.
	Header        http.Header
	Body          io.Reader
	ContentLength int64 // -1 unknown
	// ClientHost is the client's Host; RouteHostRewrite the route's
	// urlRewrite.hostRewrite ("" when none) (HST-1).
	ClientHost       string
	RouteHostRewrite string
	RequestID        string
}

// Result is what the client gets.
type Result struct {
	// Response is the chosen origin response, nil when Status is
	// synthesized. Its Body must be closed; it reads under the answering
	// origin's readTimeout and responseTimeout, and its Read returns an
	// error for which Truncated is true if the body ends short.
	// Response.Trailer is always nil: origin trailers are dropped (PRT-5).
	Response *http.Response
	// Status is 502 or 504 when synthesized, else Response.StatusCode.
	Status int
	// Reason is the RFC 9209 proxy-status error type of a synthesized
	// status ("connection_refused", "connection_timeout",
	// "http_response_timeout", "destination_unavailable", ...); "" for an
	// origin response.
	Reason   outcome.Reason
	Attempts []Attempt
	// Origin is the origin that answered, or for a synthesized status the
	// last origin tried (the primary when none was).
	Origin string
}

// Attempt is one origin attempt.
type Attempt struct {
	N        int // 1-based
	Origin   string
	Address  string // dial address (host or IP)
	IP       string // the IP dialled, when known
	Host     string // Host header and SNI
	Protocol string
	Start    time.Time
	Duration time.Duration // until response headers or failure
	Status   int           // 0 without a response
	// Outcome is what the attempt produced (package outcome); it is logged
	// as "usable", "retry:<CONDITION>" (the status matched that retry
	// condition of the origin), "connect_failure:<reason>", "redirect" (a
	// listed redirect, to be followed), "timeout" (the maxAttemptsTimeout
	// deadline passed during the attempt), "error:<reason>" (no response,
	// not a connect failure) or "canceled".
	Outcome outcome.Outcome
	Err     string
}

// Engine fetches from a set of origins. It is safe for concurrent use.
type Engine struct {
	client  *upstream.Client
	origins map[string]config.EffectiveOrigin
	log     *slog.Logger
	gcs     GCS              // how gs:// origins are reached
	now     func() time.Time // signing time (tests move it)
}

// New returns an engine that reaches origins through client; origins maps
// each origin's name to its effective settings (failovers are looked up by
// name). log nil means slog.Default().
func New(client *upstream.Client, origins map[string]config.EffectiveOrigin, log *slog.Logger, opts ...Option) *Engine {
	if log == nil {
		log = slog.Default()
	}
	e := &Engine{client: client, origins: origins, log: log, now: time.Now}
	for _, opt := range opts {
		opt(e)
	}
	return e
}

// Fetch runs the attempt loop for req, starting at the primary origin (the
// route's). The result always has a Status; ctx ending (the client going
// away) cancels the fetch, and the chosen response's body too.
func (e *Engine) Fetch(ctx context.Context, primary string, req Request) *Result {
	f := &fetch{e: e, req: req, start: time.Now()}
	// The result and the usual single attempt live in f (issue #14: two
	// allocations fewer per request).
	f.result.Origin, f.result.Attempts = primary, f.first[:0]
	f.res = &f.result
	po, ok := e.origins[primary]
	if !ok {
		f.final(http.StatusBadGateway, "proxy_configuration_error")
		e.log.Error("origin fetch: unknown origin", "request_id", req.RequestID, "origin", primary)
		return f.finish()
	}
	// ATT-9, TMO-2: the primary's value only, one deadline for the whole
	// chain: retries all run within it (TMO-9) and a failover gets what
	// is left of it (TMO-8).
	f.deadline = f.start.Add(po.MaxAttemptsTimeout)
	f.safe = safeMethod(req.Method) // ATT-1
	if po.AWSV4 != nil && !safeMethod(req.Method) {
		// BKT-1: only GET, HEAD and OPTIONS are signed; an unsafe method
		// never fails over (ATT-2), so no other origin is asked either.
		f.final(http.StatusBadGateway, "proxy_configuration_error")
		e.log.Warn("origin fetch: method not sent to an awsV4Authentication origin", "request_id", req.RequestID,
			"origin", primary, "method", req.Method)
		return f.finish()
	}
	f.prepareBody()
	f.enter(po)

	for {
		step := f.plan()
		if step.done {
			break
		}
		out := f.try(ctx, step)
		if f.judge(out) {
			break
		}
	}
	return f.finish()
}

// fetch is the state of one Fetch.
type fetch struct {
	e        *Engine
	req      Request
	start    time.Time
	deadline time.Time
	safe     bool // GET, HEAD, OPTIONS: retries, failover, redirects allowed (ATT-1)
	body     []byte
	oneShot  io.Reader // a body that can be sent only once

	origin   config.EffectiveOrigin // the current origin of the chain
	onOrigin int                    // attempts made under it, followed redirects included (ATT-3, RDR-2)
	target   upstream.Target        // where the next attempt to this origin goes
	path     string                 // path and query the next attempt asks for
	// bucketTarget is a gs:// origin's own target (its bearer token goes
	// there only); zero for other origins.
	bucketTarget upstream.Target

	next     nextKind       // what judge asked for
	redirect *redirectTo    // set with next == nextRedirect
	reason   outcome.Reason // proxy status of the last failure
	res      *Result        // &result
	result   Result
	first    [1]Attempt // result.Attempts' room for the usual one attempt
}

type nextKind int

const (
	nextFirst    nextKind = iota // the first attempt
	nextRetry                    // the last attempt failed under a retry condition
	nextRedirect                 // the last attempt returned a redirect to follow
)

type redirectTo struct {
	target upstream.Target
	path   string
}

// step is what plan decided: an attempt to target, or done.
type step struct {
	done   bool
	target upstream.Target
	path   string
}

var safeMethods = []string{http.MethodGet, http.MethodHead, http.MethodOptions}

func safeMethod(m string) bool { return slices.Contains(safeMethods, m) }

// prepareBody keeps a safe method's body (up to maxBufferedBody) so it can
// be resent; an unsafe method's body, or a larger one, is sent once.
func (f *fetch) prepareBody() {
	if f.req.Body == nil || f.req.ContentLength == 0 {
		return
	}
	if !f.safe {
		f.oneShot = f.req.Body
		return
	}
	buf, err := io.ReadAll(io.LimitReader(f.req.Body, maxBufferedBody+1))
	if err != nil || len(buf) > maxBufferedBody {
		f.oneShot = io.MultiReader(bytes.NewReader(buf), f.req.Body)
		f.safe = false // cannot resend it: one attempt only
		return
	}
	f.body = buf
	if f.body == nil {
		f.body = []byte{}
	}
}

// enter makes o the current origin of the chain (ATT-3); its target's Host
// is computed for it (HST-1, HST-2).
func (f *fetch) enter(o config.EffectiveOrigin) {
	f.origin, f.onOrigin, f.bucketTarget = o, 0, upstream.Target{}
	if bucket, ok := bucketOf(o.Address); ok {
		// HST-4, BKT-4: the endpoint and the Host come from the bucket;
		// hostRewrite is ignored.
		f.target, f.path = f.e.gcsTarget(o, bucket, f.req.PathAndQuery)
		f.bucketTarget = f.target
		return
	}
	f.target = upstream.Target{Protocol: o.Protocol, Address: o.Address, Port: o.Port, Host: f.hostFor(o)}
	f.path = f.req.PathAndQuery
}

// hostFor is the Host (and SNI) an origin gets: its own hostRewrite, else
// the route's, else the client's (HST-1); so a failover without its own
// hostRewrite sees what the primary sees (HST-2).
func (f *fetch) hostFor(o config.EffectiveOrigin) string {
	switch {
	case o.HostRewrite != "":
		return o.HostRewrite
	case f.req.RouteHostRewrite != "":
		return f.req.RouteHostRewrite
	}
	return f.req.ClientHost
}

// plan decides the next step: an attempt (to the same target, a redirect
// target or the failover origin) or the end of the chain.
func (f *fetch) plan() step {
	attempts := len(f.res.Attempts)
	switch f.next {
	case nextFirst:
		return step{target: f.target, path: f.path}
	case nextRedirect:
		// RDR-2: one more attempt under the origin that returned it;
		// RDR-5: beyond its maxAttempts or the overall cap, 502.
		if attempts >= MaxAttempts || f.onOrigin >= f.origin.MaxAttempts {
			return f.final(http.StatusBadGateway, outcome.DestinationUnavailable)
		}
		f.target, f.path = f.redirect.target, f.redirect.path
	case nextRetry:
		if attempts >= MaxAttempts { // ATT-4
			return f.final(http.StatusBadGateway, f.reason)
		}
		if f.onOrigin >= f.origin.MaxAttempts { // ATT-3: this origin is done, fail over
			name := f.origin.Failover
			if name == "" {
				return f.final(http.StatusBadGateway, f.reason) // ATT-7, ATT-8
			}
			fo, ok := f.e.origins[name]
			if !ok {
				f.e.log.Error("origin fetch: unknown failover origin", "request_id", f.req.RequestID, "origin", f.origin.Name, "failover", name)
				return f.final(http.StatusBadGateway, f.reason)
			}
			f.enter(fo)
		}
	}
	if !time.Now().Before(f.deadline) { // ATT-9
		return f.final(http.StatusGatewayTimeout, outcome.ConnectionTimeout)
	}
	return step{target: f.target, path: f.path}
}

// final ends the chain with a synthesized status.
func (f *fetch) final(status int, reason outcome.Reason) step {
	f.res.Status, f.res.Reason = status, reason
	return step{done: true}
}

// tried is what one attempt produced: its outcome, with the response to
// hand on (outcome.Usable) or the redirect to follow (outcome.Redirect).
type tried struct {
	outcome.Outcome
	resp     *http.Response
	redirect *redirectTo
}

// errAttemptsTimeout is the cancellation cause when the maxAttemptsTimeout
// deadline ends an attempt (TMO-7). It wraps upstream.ErrConnectTimeout so
// upstream classifies the wait it cut short.
var errAttemptsTimeout = fmt.Errorf("maxAttemptsTimeout passed: %w", upstream.ErrConnectTimeout)

// try makes one attempt to s.target under the current origin's timeouts
// (TMO-4) and judges nothing: it reports what happened.
func (f *fetch) try(ctx context.Context, s step) tried {
	o := f.origin
	f.onOrigin++
	f.res.Origin = o.Name
	a := Attempt{N: len(f.res.Attempts) + 1, Origin: o.Name, Address: s.target.Address, Host: s.target.Host, Protocol: s.target.Protocol, Start: time.Now()}
	if a.Host == "" {
		a.Host = s.target.Address
	}

	// TMO-1: connectTimeout runs from the start of the attempt until the
	// response headers. TMO-7: never beyond the maxAttemptsTimeout deadline.
	wait, cause := o.ConnectTimeout, upstream.ErrConnectTimeout
	if left := f.deadline.Sub(a.Start); left <= wait {
		wait, cause = left, errAttemptsTimeout
	}
	actx, cancel := context.WithCancelCause(ctx)
	// TMO-3: a timer, not a context deadline, so that the body of a chosen
	// response outlives it.
	timer := time.AfterFunc(wait, func() { cancel(cause) })

	var resp *http.Response
	req := f.request(actx, s.path)
	// BKT-1, BKT-2, BKT-4: credentials last, after every rewrite, on the
	// Host this attempt sends.
	err := f.authorize(req, o, s.target)
	if err != nil {
		err = &upstream.Error{Reason: string(outcome.ProxyConfigurationError), Target: s.target, Err: err}
	} else {
		resp, a.IP, err = f.e.client.Do(actx, s.target, req)
	}
	if !timer.Stop() && err == nil {
		// The timer fired as the headers arrived: too late.
		resp.Body.Close()
		resp, err = nil, &upstream.Error{Reason: string(outcome.HTTPResponseTimeout), ConnectFailure: true, Connected: true, Target: s.target, Cause: context.Cause(actx)}
	}
	a.Duration = time.Since(a.Start)
	if ip := failedIP(err); ip != "" {
		a.IP = ip // the one it failed on, or was dialling
	}

	var out tried
	if err != nil {
		cancel(nil)
		a.Err = err.Error()
		out.Reason = outcome.Reason(upstream.Reason(err))
		switch {
		case errors.Is(err, errAttemptsTimeout):
			out.Kind = outcome.Timeout
		case upstream.IsConnectFailure(err):
			out.Kind = outcome.ConnectFailure
		case ctx.Err() != nil:
			out.Kind, out.Reason = outcome.Canceled, outcome.ClientGone
		default:
			out.Kind = outcome.Error
		}
	} else {
		a.Status = resp.StatusCode
		out = f.classify(o, s, resp)
		if out.Kind == outcome.Usable {
			out.resp = f.choose(o, resp, cancel)
		} else {
			resp.Body.Close() // a discarded response
			cancel(nil)
		}
	}
	a.Outcome = out.Outcome
	f.record(a)
	return out
}

// failedIP is the address an attempt that failed with err was on, if
// known. Only an error is looked into: errors.As's target costs an
// allocation (issue #14: one per attempt, failed or not).
func failedIP(err error) string {
	if err == nil {
		return ""
	}
	var ue *upstream.Error
	if errors.As(err, &ue) {
		return ue.IP
	}
	return ""
}

// classify sorts a response: a listed redirect to follow (RDR-1, RDR-3,
// RDR-6), a status matching one of the origin's retry conditions (ATT-5), or
// usable (ATT-6, ATT-10).
func (f *fetch) classify(o config.EffectiveOrigin, s step, resp *http.Response) tried {
	status := resp.StatusCode
	if f.safe && slices.Contains(o.RedirectCodes, status) {
		if r, ok := f.redirectTarget(o, s, resp.Header.Get("Location")); ok {
			return tried{Outcome: outcome.Outcome{Kind: outcome.Redirect}, redirect: r}
		}
		return tried{}
	}
	if cond := matchCondition(o.RetryConditions, status); cond != "" {
		return tried{Outcome: outcome.Outcome{Kind: outcome.Retry, Condition: cond, Reason: outcome.DestinationUnavailable}}
	}
	return tried{}
}

// judge decides what the outcome means for the chain and reports whether
// the chain has ended.
func (f *fetch) judge(out tried) bool {
	f.reason = out.Reason
	switch out.Kind {
	case outcome.Usable:
		f.res.Response, f.res.Status, f.res.Reason = out.resp, out.resp.StatusCode, ""
		return true
	case outcome.Timeout: // ATT-9, TMO-2
		f.final(http.StatusGatewayTimeout, out.Reason)
		return true
	case outcome.Error, outcome.Canceled: // ATT-8: no response, and nothing to retry
		f.final(http.StatusBadGateway, out.Reason)
		return true
	case outcome.ConnectFailure:
		if !slices.Contains(f.origin.RetryConditions, config.RetryConnectFailure) {
			f.final(http.StatusBadGateway, out.Reason) // ATT-8: no response, not a retry condition here
			return true
		}
	case outcome.Redirect:
		f.next, f.redirect = nextRedirect, out.redirect
		return false
	}
	// A connect failure or a status under a retry condition.
	if !f.safe { // ATT-2: an unsafe method gets 502 at once
		f.final(http.StatusBadGateway, out.Reason)
		return true
	}
	f.next = nextRetry // ATT-11: at once, no backoff
	return false
}

// request builds the attempt's request: the client's headers with the
// origin's requestHeadersToAdd on top (HST-6), without TE (PRT-5).
func (f *fetch) request(ctx context.Context, pathAndQuery string) *http.Request {
	h := f.req.Header
	_, te := h["Te"]
	_, host := h["Host"]
	if te || host || h == nil || len(f.origin.RequestHeaders) > 0 || f.origin.AWSV4 != nil || f.bucketTarget != (upstream.Target{}) {
		// This attempt's own copy, to change (issue #14: an attempt that
		// changes nothing sends the fetch's header as it is; nothing
		// below writes to it).
		h = h.Clone()
		if h == nil {
			h = http.Header{}
		}
		h.Del("Te")
		h.Del("Host")
	}
	for _, add := range f.origin.RequestHeaders {
		if strings.EqualFold(add.HeaderName, "Host") {
			continue // the Host comes from hostRewrite (HST-1)
		}
		if add.Replace {
			h.Set(add.HeaderName, add.HeaderValue)
		} else {
			h.Add(add.HeaderName, add.HeaderValue)
		}
	}
	u, err := requri.Parse(pathAndQuery) // url.ParseRequestURI, faster for plain paths
	if err != nil {
		u = &url.URL{Opaque: pathAndQuery}
	}
	var zero http.Request
	r := zero.WithContext(ctx) // one allocation, not a request and its copy
	r.Method, r.URL, r.Header, r.ContentLength = f.req.Method, u, h, f.req.ContentLength
	switch {
	case f.body != nil:
		body := f.body
		r.ContentLength = int64(len(body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	case f.oneShot != nil:
		r.Body = io.NopCloser(f.oneShot)
		f.oneShot = nil // sent once
	default:
		r.ContentLength = 0
	}
	return r
}

// redirectTarget is where a redirect goes (RDR-4): the Location host (dialled
// through Resolve or DNS, port from the URL or the protocol's default), Host
// and SNI the Location's host[:port], the protocol of the origin that
// returned it. ok is false if it must not be followed: no usable Location,
// or a host outside the origin's allow-list (RDR-6).
func (f *fetch) redirectTarget(o config.EffectiveOrigin, s step, location string) (*redirectTo, bool) {
	if location == "" {
		return nil, false
	}
	ref, err := url.Parse(location)
	if err != nil || (ref.Scheme != "" && ref.Scheme != "http" && ref.Scheme != "https") {
		return nil, false
	}
	base, err := url.Parse("https://" + hostOrAddress(s.target) + s.path)
	if err != nil {
		return nil, false
	}
	u := base.ResolveReference(ref)
	if ref.Host == "" { // relative: the same target
		return &redirectTo{target: s.target, path: u.RequestURI()}, true
	}
	if u.Hostname() == "" {
		return nil, false
	}
	if len(o.RedirectAllowList) > 0 && !hostAllowed(o.RedirectAllowList, u) {
		f.e.log.Info("origin redirect not followed: host not in allow-list", "request_id", f.req.RequestID,
			"origin", o.Name, "location", location)
		return nil, false
	}
	// The origin's protocol; for a gs:// origin the one its endpoint
	// uses (HTTP for an http:// endpoint).
	protocol := o.Protocol
	if _, ok := bucketOf(o.Address); ok {
		protocol = s.target.Protocol
	}
	port := upstream.DefaultPort(protocol)
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return nil, false
		}
		port = n
	}
	t := upstream.Target{Protocol: protocol, Address: u.Hostname(), Port: port, Host: u.Host}
	return &redirectTo{target: t, path: u.RequestURI()}, true
}

func hostOrAddress(t upstream.Target) string {
	if t.Host != "" {
		return t.Host
	}
	return net.JoinHostPort(t.Address, strconv.Itoa(t.Port))
}

// hostAllowed reports whether u's host is in the allow-list (entries are
// host names or host:port, compared case-insensitively).
func hostAllowed(list []string, u *url.URL) bool {
	for _, h := range list {
		if strings.EqualFold(h, u.Hostname()) || strings.EqualFold(h, u.Host) {
			return true
		}
	}
	return false
}

// matchCondition returns the first of conds that status matches (ATT-5).
// conds are upper case (config.Effective normalizes them at load).
func matchCondition(conds []string, status int) string {
	for _, c := range conds {
		var hit bool
		switch c {
		case config.RetryHTTP5xx:
			hit = status >= 500 && status <= 599
		case config.RetryGatewayError:
			hit = status == 502 || status == 503 || status == 504
		case config.RetryRetriable4xx:
			hit = status == 409 || status == 429
		case config.RetryNotFound:
			hit = status == 404
		case config.RetryForbidden:
			hit = status == 403
		}
		if hit {
			return c
		}
	}
	return ""
}

// record logs an attempt (LOG-1, LOG-2) and keeps it.
func (f *fetch) record(a Attempt) {
	f.res.Attempts = append(f.res.Attempts, a)
	if !f.e.log.Enabled(context.Background(), slog.LevelInfo) {
		return // no attributes built for a record not written (issue #14)
	}
	var room [10]slog.Attr
	attrs := append(room[:0], slog.String("request_id", f.req.RequestID), slog.Int("attempt", a.N), slog.String("origin", a.Origin),
		slog.String("origin_ip", a.IP), slog.String("host", a.Host), slog.String("protocol", a.Protocol), slog.Int("status", a.Status),
		slog.String("outcome", a.Outcome.String()), slog.Int64("latency_ms", a.Duration.Milliseconds()))
	if a.Err != "" {
		attrs = append(attrs, slog.String("err", a.Err))
	}
	logjson.LogAttrs(context.Background(), f.e.log, slog.LevelInfo, "origin attempt", attrs...) // no slog.Record (issue #14)
}

// finish returns the result. A fetch writes no summary record of its own:
// its attempts are logged as they happen (record) and the client request's
// record carries the origin, attempt count and proxy status (LOG-1, LOG-2;
// docs/reference.md "Logs"), so a third record per request only cost the
// proxy path a log write (issue #14).
func (f *fetch) finish() *Result {
	return f.res
}
