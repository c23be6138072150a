// Package control is the JSON control API of an originemu.Emulator, served
// by the originemu command and used by package emuclient.
//
// Routes (all bodies JSON unless noted):
//
//	GET    /v1/health                  {"status":"ok"}
//	GET    /v1/listeners               [originemu.ListenerInfo], with each one's state
//	PUT    /v1/listeners/{name}/state  originemu.StateChange -> originemu.ListenerInfo
//	PUT    /v1/listeners/{name}/shaping rules.Shaping ({} = none) -> originemu.ListenerInfo
//	GET    /v1/rules                   [rules.Status]
//	POST   /v1/rules                   one rules.Rule or an array; all or none -> 201 {"rules":[stored rules]}
//	DELETE /v1/rules                   remove every rule -> {"deleted":N}
//	DELETE /v1/rules/{id}              204, or 404
//	GET    /v1/objects                 [objects.Spec], by path
//	PUT    /v1/objects                 one objects.Spec or an array; all or none -> 204
//	DELETE /v1/objects?path=/x         204, or 404
//	GET    /v1/journal?QUERY           journal.Snapshot
//	GET    /v1/journal/wait?QUERY&n=N&ended=BOOL&timeout=DUR
//	                                   long poll: 200 {"requests":[...]} once n
//	                                   matching (ended) requests exist; 408 with
//	                                   "matched" and "requests" when timeout passes
//	DELETE /v1/journal                 204
//	GET    /v1/holds                   [originemu.HoldStatus]
//	POST   /v1/holds/{name}/release    {"released":N}
//	POST   /v1/reset                   204; rules, objects, holds, journal
//	GET    /v1/ca.pem                  the test CA certificate (application/x-pem-file)
//
// QUERY is any of listener, pathPrefix, method, after (a request sequence
// number) and limit. The wait timeout defaults to DefaultWaitTimeout and may
// not exceed MaxWaitTimeout.
//
// Every error is an ErrorResponse: 400 for malformed JSON, unknown fields,
// invalid rules and bad query parameters (each problem named in Fields), 404
// for unknown ids, paths and routes, 405 for a method a route does not
// take, 413 for a body over MaxBodyBytes.
package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/emuapi"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

// Limits of the API.
const (
	MaxBodyBytes       = emuapi.MaxBodyBytes
	DefaultWaitTimeout = emuapi.DefaultWaitTimeout
	MaxWaitTimeout     = emuapi.MaxWaitTimeout
)

// The answers' types, from package api (which clients import instead of
// this server package).
type (
	ErrorResponse   = emuapi.ErrorResponse
	RulesResponse   = emuapi.RulesResponse
	DeletedResponse = emuapi.DeletedResponse
	WaitResponse    = emuapi.WaitResponse
	ReleaseResponse = emuapi.ReleaseResponse
	HealthResponse  = emuapi.HealthResponse
)

// api serves the routes of one emulator.
type api struct {
	e   *originemu.Emulator
	log *slog.Logger
	mux *http.ServeMux
}

// NewHandler returns the control API of e. log receives one line per
// rejected request; nil means slog.Default().
func NewHandler(e *originemu.Emulator, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	a := &api{e: e, log: log, mux: http.NewServeMux()}
	routes := []struct {
		pattern string
		h       func(http.ResponseWriter, *http.Request) error
	}{
		{"GET /v1/health", a.health},
		{"GET /v1/listeners", a.listeners},
		{"PUT /v1/listeners/{name}/state", a.setState},
		{"PUT /v1/listeners/{name}/shaping", a.setShaping},
		{"GET /v1/rules", a.listRules},
		{"POST /v1/rules", a.addRules},
		{"DELETE /v1/rules", a.deleteRules},
		{"DELETE /v1/rules/{id}", a.deleteRule},
		{"GET /v1/objects", a.listObjects},
		{"PUT /v1/objects", a.putObjects},
		{"DELETE /v1/objects", a.deleteObject},
		{"GET /v1/journal", a.journal},
		{"GET /v1/journal/wait", a.wait},
		{"DELETE /v1/journal", a.clearJournal},
		{"GET /v1/holds", a.holds},
		{"POST /v1/holds/{name}/release", a.release},
		{"POST /v1/reset", a.reset},
		{"GET /v1/ca.pem", a.caPEM},
	}
	for _, rt := range routes {
		a.mux.HandleFunc(rt.pattern, a.wrap(rt.h))
	}
	return a
}

// ServeHTTP routes r; requests no route takes get a JSON 404 or 405.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := a.mux.Handler(r); pattern == "" {
		a.unrouted(w, r)
		return
	}
	a.mux.ServeHTTP(w, r)
}

// unrouted lets the mux decide between 404 and 405 (and the Allow header)
// and answers in JSON.
func (a *api) unrouted(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{header: http.Header{}}
	a.mux.ServeHTTP(rec, r)
	var err *apiError
	switch rec.status {
	case http.StatusMethodNotAllowed:
		allow := rec.header.Get("Allow")
		w.Header().Set("Allow", allow)
		err = errorf(http.StatusMethodNotAllowed, "method %s is not allowed for %s (allowed: %s)", r.Method, r.URL.Path, allow)
	default:
		err = errorf(http.StatusNotFound, "no route for %s %s", r.Method, r.URL.Path)
	}
	a.fail(w, r, err)
}

// recorder captures what the mux answers to an unrouted request.
type recorder struct {
	header http.Header
	status int
}

func (rec *recorder) Header() http.Header { return rec.header }
func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
	}
}

func (rec *recorder) Write(p []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	return len(p), nil
}

// apiError is an answer other than success.
type apiError struct {
	status int
	body   ErrorResponse
}

func (e *apiError) Error() string { return e.body.Error }

func errorf(status int, format string, args ...any) *apiError {
	return &apiError{status: status, body: ErrorResponse{Error: fmt.Sprintf(format, args...)}}
}

// badField is a 400 naming one field or parameter.
func badField(field, format string, args ...any) *apiError {
	fe := rules.FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
	return &apiError{status: http.StatusBadRequest, body: ErrorResponse{Error: fe.Error(), Fields: []rules.FieldError{fe}}}
}

// wrap turns a handler that returns an error into an http.HandlerFunc.
func (a *api) wrap(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				ae = errorf(http.StatusInternalServerError, "%v", err)
			}
			a.fail(w, r, ae)
		}
	}
}

func (a *api) fail(w http.ResponseWriter, r *http.Request, e *apiError) {
	level := slog.LevelInfo
	switch e.status {
	case http.StatusRequestTimeout, http.StatusServiceUnavailable:
		level = slog.LevelDebug // a long poll ending is routine
	case http.StatusInternalServerError:
		level = slog.LevelError
	}
	a.log.Log(r.Context(), level, "originemu control request failed", "method", r.Method, "path", r.URL.Path, "status", e.status, "err", e.body.Error)
	_ = writeJSON(w, e.status, e.body)
}

// writeJSON writes v as the answer; its error is a failure to encode v,
// before anything was written.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encoding the answer: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	// A failed write means the client went away: there is nobody to tell.
	_, _ = w.Write(buf.Bytes())
	return nil
}

// ok writes v as a 200 answer.
func ok(w http.ResponseWriter, v any) error { return writeJSON(w, http.StatusOK, v) }

func noContent(w http.ResponseWriter) error {
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// readBody reads a request body of at most MaxBodyBytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
			return nil, errorf(http.StatusRequestEntityTooLarge, "request body is larger than %d bytes", MaxBodyBytes)
		}
		return nil, errorf(http.StatusBadRequest, "reading the request body: %v", err)
	}
	return b, nil
}

func (a *api) health(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	return ok(w, HealthResponse{Status: "ok"})
}

func (a *api) listeners(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	return ok(w, a.e.Listeners())
}

func (a *api) setState(w http.ResponseWriter, r *http.Request) error {
	return listenerChange(a, w, r, "state change", a.e.SetListenerState)
}

func (a *api) setShaping(w http.ResponseWriter, r *http.Request) error {
	return listenerChange(a, w, r, "shaping", a.e.SetListenerShaping)
}

// listenerChange decodes one T and applies it to the listener named in
// the path with set.
func listenerChange[T any](a *api, w http.ResponseWriter, r *http.Request, what string, set func(string, T) (originemu.ListenerInfo, error)) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	name := r.PathValue("name")
	if _, ok := a.e.Listener(name); !ok {
		return errorf(http.StatusNotFound, "no listener named %q", name)
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
		return badField("body", "want one %s object, not an array", what)
	}
	vs, err := decodeList[T](body, what, func(int, int) string { return "" })
	if err != nil {
		return err
	}
	li, err := set(name, vs[0])
	if err != nil {
		if fields, ok := rules.AsErrors(err); ok {
			ae := errorf(http.StatusBadRequest, "invalid %s, nothing changed: %v", what, err)
			ae.body.Fields = fields
			return ae
		}
		if errors.Is(err, originemu.ErrClosed) {
			return errorf(http.StatusServiceUnavailable, "%v", err)
		}
		return err
	}
	return ok(w, li)
}

func (a *api) listRules(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	return ok(w, a.e.Rules())
}

func (a *api) addRules(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	rs, err := decodeList[rules.Rule](body, "rule", func(i, n int) string {
		if n == 1 {
			return "" // as rules.Table.Add names a lone rule's fields
		}
		return fmt.Sprintf("rules[%d]", i)
	})
	if err != nil {
		return err
	}
	stored, err := a.e.AddRules(rs...)
	if err != nil {
		ae := errorf(http.StatusBadRequest, "invalid rules, none added: %v", err)
		if fields, ok := rules.AsErrors(err); ok {
			ae.body.Fields = fields
		}
		return ae
	}
	if stored == nil {
		stored = []rules.Rule{}
	}
	return writeJSON(w, http.StatusCreated, RulesResponse{Rules: stored})
}

func (a *api) deleteRules(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	return ok(w, DeletedResponse{Deleted: a.e.DeleteRules()})
}

func (a *api) deleteRule(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	id := r.PathValue("id")
	if !a.e.DeleteRule(id) {
		return errorf(http.StatusNotFound, "no rule with id %q", id)
	}
	return noContent(w)
}

func (a *api) listObjects(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	specs := a.e.Objects()
	slices.SortFunc(specs, func(x, y objects.Spec) int { return strings.Compare(x.Path, y.Path) })
	return ok(w, specs)
}

func (a *api) putObjects(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	specs, err := decodeList[objects.Spec](body, "object", func(i, _ int) string {
		return fmt.Sprintf("objects[%d]", i) // as objects.Store.Put names fields
	})
	if err != nil {
		return err
	}
	// A control-API caller may be anyone who reaches the port: it cannot
	// make the emulator serve local files (the config file and the Go API
	// can).
	for i, s := range specs {
		if s.File != "" {
			ae := errorf(http.StatusBadRequest, "objects[%d].file: file objects can be configured only in the emulator's config file or Go API", i)
			ae.body.Fields = []rules.FieldError{{Field: fmt.Sprintf("objects[%d].file", i), Problem: "not allowed over the control API"}}
			return ae
		}
	}
	if err := a.e.PutObjects(specs...); err != nil {
		ae := errorf(http.StatusBadRequest, "invalid objects, none stored: %v", err)
		ae.body.Fields, _ = rules.AsErrors(err)
		return ae
	}
	return noContent(w)
}

func (a *api) deleteObject(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, "path"); err != nil {
		return err
	}
	path := r.URL.Query().Get("path")
	switch {
	case path == "":
		return badField("path", "is required (the object's path, e.g. ?path=/a/b)")
	case !strings.HasPrefix(path, "/"):
		return badField("path", "must start with '/', got %q", path)
	}
	if !a.e.DeleteObject(path) {
		return errorf(http.StatusNotFound, "no object configured at path %q", path)
	}
	return noContent(w)
}

func (a *api) journal(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, queryParams...); err != nil {
		return err
	}
	q, err := a.journalQuery(r)
	if err != nil {
		return err
	}
	return ok(w, a.e.Journal().Query(q))
}

func (a *api) wait(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r, append([]string{"n", "ended", "timeout"}, queryParams...)...); err != nil {
		return err
	}
	q, err := a.journalQuery(r)
	if err != nil {
		return err
	}
	wp, err := waitParams(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), wp.timeout)
	defer cancel()
	wait, what := a.e.Journal().WaitRequests, "requests"
	if wp.ended {
		wait, what = a.e.Journal().WaitEnded, "ended requests"
	}
	reqs, err := wait(ctx, q, wp.n)
	if err == nil {
		return ok(w, WaitResponse{Requests: reqs})
	}
	matched := len(reqs)
	if wp.ended {
		matched = 0
		for _, rq := range reqs {
			if rq.End != journal.EndPending {
				matched++
			}
		}
	}
	ae := errorf(http.StatusRequestTimeout, "timed out after %s waiting for %d %s; %d matched", wp.timeout, wp.n, what, matched)
	if r.Context().Err() != nil {
		// The client went away or the server is shutting down.
		ae = errorf(http.StatusServiceUnavailable, "wait cancelled (%v) while waiting for %d %s; %d matched", context.Cause(r.Context()), wp.n, what, matched)
	}
	ae.body.Matched = &matched
	ae.body.Requests = reqs
	return ae
}

func (a *api) clearJournal(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	a.e.Journal().Reset()
	return noContent(w)
}

func (a *api) holds(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	return ok(w, a.e.Holds())
}

func (a *api) release(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	return ok(w, ReleaseResponse{Released: a.e.Release(r.PathValue("name"))})
}

func (a *api) reset(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	a.e.Reset()
	return noContent(w)
}

func (a *api) caPEM(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	_, _ = w.Write(a.e.CAPEM())
	return nil
}
