package originemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/edgeconform/edgeconform/emulators/fault"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/wire"
)

// ServeWire answers one request: it journals it, picks the rule that fires
// (a control-API rule first, then a path-encoded script), and runs the
// exchange in order: hold, delay, a cut before headers, status and headers,
// body (paced, cut), end.
func (e *Emulator) ServeWire(w wire.ResponseWriter, r *wire.Request) {
	seq := e.journal.Begin(journal.Request{
		ConnID: r.Conn.ID, Listener: r.Conn.Listener, Proto: r.Proto, StreamID: r.StreamID,
		Method: r.Method, URI: r.RequestURI, Path: r.URL.Path, Host: r.Host,
		Headers: r.Fields, Range: r.Header.Get("Range"), Arrived: time.Now(),
	})
	if r.RequestURI == "" {
		e.journal.Update(seq, func(q *journal.Request) { q.URI = r.URL.RequestURI() })
	}
	x := &exchange{e: e, w: w, r: r, seq: seq}
	// Code serving the request (a backend) may add to its journal note.
	x.ctx = journal.WithAnnotator(r.Context(), func(note string) { x.notef("%s", note) })
	x.ctx = journal.WithUpstreamRecorder(x.ctx, func(u journal.Upstream) {
		e.journal.Update(seq, func(q *journal.Request) { q.Upstream = &u })
	})
	x.r.Request = x.r.Request.WithContext(x.ctx)
	x.run()
	e.journal.Update(seq, func(q *journal.Request) {
		q.Status, q.BodyBytes, q.End, q.Note, q.Ended = x.status, w.BodyBytes(), x.end, x.note, time.Now()
	})
}

// exchange is one request's run through its rule.
type exchange struct {
	e   *Emulator
	w   wire.ResponseWriter
	r   *wire.Request
	seq uint64
	ctx context.Context

	status int
	end    string
	note   string
}

func (x *exchange) notef(format string, args ...any) {
	if x.note != "" {
		x.note += "; "
	}
	x.note += fmt.Sprintf(format, args...)
}

func (x *exchange) run() {
	rule, spec, err := x.e.choose(x.r)
	if err != nil {
		x.notef("%v", err)
		x.plain(http.StatusBadRequest, "originemu: "+err.Error()+"\n")
		return
	}
	if rule.ID != "" {
		x.e.journal.Update(x.seq, func(q *journal.Request) { q.Rule = rule.ID })
	}
	a := &rule.Action
	if a.NeedsH2() && x.r.ProtoMajor != 2 {
		msg := fmt.Sprintf("originemu: rule %s uses an h2-only fault (rstStream/goAway) but this request came over %s", rule.ID, x.r.Proto)
		x.notef("%s", msg)
		x.plain(http.StatusNotImplemented, msg+"\n")
		x.end = journal.EndError
		return
	}
	if !x.hold(rule) || !x.sleep(a.Delay.D()) {
		x.end = journal.EndClientGone
		return
	}
	end, cut := a.Ends()
	if cut != nil && cut.Before() {
		x.cut(end, cut)
		return
	}
	s := &shaper{x: x, a: a, end: end, cut: cut}
	backend := x.e.backend(x.r.Conn.Listener)
	switch {
	case a.Redirect != nil:
		x.redirect(s, a.Redirect)
	case !a.ServesObject():
		x.scripted(s, a, spec)
	case backend != nil:
		// As net/http's server does, and S3 and Cloud Storage do: the
		// backend may replace it (RNG-1 needs a Date on large objects).
		s.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
		backend.ServeHTTP(s, x.r.Request)
	default:
		if err := objects.Serve(s, x.r.Request, spec, time.Now()); err != nil {
			x.notef("serving object: %v", err)
			if !s.wroteHeader {
				x.plain(http.StatusInternalServerError, "originemu: "+err.Error()+"\n")
				x.end = journal.EndError
				return
			}
		}
	}
	s.finish()
}

// backend is the listener's backend, or nil.
func (e *Emulator) backend(listener string) http.Handler {
	if l := e.byName[listener]; l != nil {
		return l.backend
	}
	return nil
}

// choose returns the rule that fires (zero Rule if none) and the object.
func (e *Emulator) choose(r *wire.Request) (rules.Rule, objects.Spec, error) {
	ps, scripted, err := rules.ParsePath(r.URL.EscapedPath())
	if err != nil {
		return rules.Rule{}, objects.Spec{}, err
	}
	spec := e.objects.Get(r.URL.Path)
	if scripted {
		spec = e.objects.Get(ps.ObjectPath).Merge(ps.Object)
	}
	tgt := rules.Target{Listener: r.Conn.Listener, Method: r.Method, Path: r.URL.Path, Header: r.Header}
	if rule, ok := e.rules.Fire(tgt); ok {
		return rule, spec, nil
	}
	if scripted && e.paths.fire(r.Conn.Listener+" "+r.URL.Path, &ps.Rule) {
		return ps.Rule, spec, nil
	}
	return rules.Rule{}, spec, nil
}

// hold waits at the rule's barrier; false if the client went away.
func (x *exchange) hold(rule rules.Rule) bool {
	h := rule.Action.Hold
	if h == nil {
		return true
	}
	name := h.Name
	if name == "" {
		name = rule.ID
	}
	timeout := h.Timeout.D()
	if timeout == 0 {
		timeout = DefaultHoldTimeout
	}
	res := x.e.holds.wait(x.ctx, name, h.Count, timeout)
	x.notef("hold %s: %s", name, res)
	return res != heldGone
}

// sleep waits d unless the client goes away first.
func (x *exchange) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-x.ctx.Done():
		return false
	}
}

// plain answers with a short text body.
func (x *exchange) plain(status int, body string) {
	h := x.w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	x.w.WriteHeader(status)
	x.status = status
	_, err := io.WriteString(x.w, body)
	x.finishPlain(err)
}

func (x *exchange) finishPlain(err error) {
	if err == nil {
		err = x.w.Flush()
	}
	if x.end == "" {
		x.end = x.endFor(err)
	}
}

// endFor classifies how writing ended.
func (x *exchange) endFor(err error) string {
	switch {
	case err == nil:
		return journal.EndComplete
	case x.ctx.Err() != nil:
		return journal.EndClientGone
	}
	x.notef("write: %v", err)
	return journal.EndError
}

func (x *exchange) redirect(s *shaper, rd *rules.Redirect) {
	status := rd.Status
	if status == 0 {
		status = http.StatusFound
	}
	h := s.Header()
	h.Set("Location", rd.Location)
	h.Set("Content-Length", "0")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	s.WriteHeader(status)
}

// scripted answers with the rule's status and body instead of the object.
func (x *exchange) scripted(s *shaper, a *rules.Action, spec objects.Spec) {
	status := a.Status
	if status == 0 {
		status = http.StatusOK
	}
	var body io.Reader
	var size int64
	h := s.Header()
	switch {
	case a.Body != nil:
		body, size = stringsReader(*a.Body), int64(len(*a.Body))
		h.Set("Content-Type", "text/plain; charset=utf-8")
	case a.BodySize != nil:
		obj := spec.Merge(objects.Spec{Size: a.BodySize}).Synthetic()
		body, size = obj.NewReader(), obj.Size
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Etag", obj.ETag())
	default:
		text := fmt.Sprintf("originemu: %d %s\n", status, http.StatusText(status))
		body, size = stringsReader(text), int64(len(text))
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	s.WriteHeader(status)
	if x.r.Method == http.MethodHead || !bodyAllowed(status) {
		return
	}
	_, _ = io.Copy(s, body) // errors are recorded by the shaper
}

func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// cut ends the exchange abnormally now, as the end directive d says.
func (x *exchange) cut(d *rules.Directive, c *rules.Cut) {
	var err error
	switch d.End {
	case fault.Stalled:
		err = x.w.Flush()
		if err == nil {
			<-x.ctx.Done()
		}
		x.notef("stalled after %d body bytes", x.w.BodyBytes())
		x.end = string(fault.Stalled)
		return
	default: // an abort the wire servers make
		code := c.Code
		if code == "" {
			code = d.DefaultCode
		}
		h2code, _ := rules.H2Code(code)
		err = x.w.Abort(d.End, h2code)
		x.end = string(d.End)
	}
	x.notef("%s after %d body bytes", d.Name, x.w.BodyBytes())
	if err != nil && !errors.Is(err, wire.ErrAborted) {
		x.notef("abort: %v", err)
	}
}
