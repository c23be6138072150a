// Package emuclient is a Go client for the control API of an originemu
// emulator (package control), as served by the originemu command:
//
//	c := emuclient.New("http://127.0.0.1:9000")
//	stored, err := c.AddRules(ctx, rules.Rule{Match: rules.Match{Path: "/a"}, Times: 2,
//		Action: rules.Action{Status: 503}})
//	...
//	reqs, err := c.WaitEnded(ctx, journal.Query{PathPrefix: "/a"}, 3)
//
// Every method takes a context first. An answer other than success is an
// *APIError; a failure to reach the API is wrapped with the operation that
// failed.
package emuclient

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/emuapi"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

// DefaultPollTimeout is how long one long-poll of a wait lasts when the
// context has no earlier deadline.
const DefaultPollTimeout = 30 * time.Second

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Client calls one emulator's control API. It is safe for concurrent use.
type Client struct {
	base *url.URL
	hc   *http.Client
	poll time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the client use hc (http.DefaultClient otherwise). A
// Timeout on hc must exceed the poll timeout for waits to work.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithPollTimeout sets how long one long-poll of WaitRequests or WaitEnded
// may last (DefaultPollTimeout otherwise; at most emuapi.MaxWaitTimeout).
// The waits poll again until their context ends.
func WithPollTimeout(d time.Duration) Option {
	return func(c *Client) { c.poll = min(max(d, time.Millisecond), emuapi.MaxWaitTimeout) }
}

// New returns a client for the API at baseURL (e.g. "http://127.0.0.1:9000").
// A baseURL that does not parse makes every call fail with that error.
func New(baseURL string, opts ...Option) *Client {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || u.Scheme == "" || u.Host == "" {
		u = &url.URL{Scheme: "invalid", Opaque: baseURL}
	}
	c := &Client{base: u, hc: http.DefaultClient, poll: DefaultPollTimeout}
	for _, o := range opts {
		o(c)
	}
	return c
}

// APIError is an answer from the API other than success.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the API's explanation.
	Message string
	// Fields names each bad field or query parameter, if any.
	Fields []rules.FieldError
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "originemu control API: %d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	// The message usually names the fields already; add those it does not.
	for _, f := range e.Fields {
		if !strings.Contains(e.Message, f.Field) {
			fmt.Fprintf(&b, "; %s", f.Error())
		}
	}
	return b.String()
}

// IsNotFound reports whether err is an APIError with status 404.
func IsNotFound(err error) bool {
	ae, ok := errors.AsType[*APIError](err)
	return ok && ae.Status == http.StatusNotFound
}

// call sends one request and decodes a successful JSON answer into out (if
// not nil). want is the success status.
func (c *Client) call(ctx context.Context, op, method, path string, query url.Values, in, out any, want int) error {
	resp, err := c.do(ctx, op, method, path, query, in)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("%s: %w", op, readAPIError(resp, nil))
	}
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s: decoding the answer: %w", op, err)
	}
	return nil
}

// do sends one request; the caller closes the answer's body.
func (c *Client) do(ctx context.Context, op, method, path string, query url.Values, in any) (*http.Response, error) {
	if c.base.Scheme == "invalid" {
		return nil, fmt.Errorf("%s: bad control API base URL %q", op, c.base.Opaque)
	}
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("%s: encoding the request: %w", op, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return resp, nil
}

// readAPIError turns an unsuccessful answer into an *APIError; if body is
// not nil it also receives the decoded error answer.
func readAPIError(resp *http.Response, body *emuapi.ErrorResponse) *APIError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	ae := &APIError{Status: resp.StatusCode}
	var er emuapi.ErrorResponse
	if err := json.Unmarshal(b, &er); err == nil && er.Error != "" {
		ae.Message, ae.Fields = er.Error, er.Fields
	} else {
		ae.Message = strings.TrimSpace(string(b))
	}
	if body != nil {
		*body = er
	}
	return ae
}

// Health checks that the API answers.
func (c *Client) Health(ctx context.Context) error {
	var h emuapi.HealthResponse
	if err := c.call(ctx, "checking health", http.MethodGet, "/v1/health", nil, nil, &h, http.StatusOK); err != nil {
		return err
	}
	if h.Status != "ok" {
		return fmt.Errorf("checking health: status %q", h.Status)
	}
	return nil
}

// Listeners lists the emulator's listeners in configuration order.
func (c *Client) Listeners(ctx context.Context) ([]emuapi.ListenerInfo, error) {
	var ls []emuapi.ListenerInfo
	err := c.call(ctx, "listing listeners", http.MethodGet, "/v1/listeners", nil, nil, &ls, http.StatusOK)
	return ls, err
}

// Listener describes the named listener; an error if there is none.
func (c *Client) Listener(ctx context.Context, name string) (emuapi.ListenerInfo, error) {
	ls, err := c.Listeners(ctx)
	if err != nil {
		return emuapi.ListenerInfo{}, err
	}
	for _, l := range ls {
		if l.Name == name {
			return l, nil
		}
	}
	return emuapi.ListenerInfo{}, fmt.Errorf("looking up listener %q: the emulator has no such listener", name)
}

// SetListenerState switches the named listener at runtime (refuse,
// blackhole, syn-drop, a TLS fault, or back to serving), now or for
// ch.For, and returns its new description.
func (c *Client) SetListenerState(ctx context.Context, name string, ch emuapi.StateChange) (emuapi.ListenerInfo, error) {
	var li emuapi.ListenerInfo
	err := c.call(ctx, fmt.Sprintf("setting the state of listener %q", name), http.MethodPut, "/v1/listeners/"+url.PathEscape(name)+"/state", nil, ch, &li, http.StatusOK)
	return li, err
}

// SetListenerShaping changes the shaping of the named listener's
// connections (bandwidth, latency, slices, slow close, byte cap); the zero
// Shaping removes it.
func (c *Client) SetListenerShaping(ctx context.Context, name string, sh rules.Shaping) (emuapi.ListenerInfo, error) {
	var li emuapi.ListenerInfo
	err := c.call(ctx, fmt.Sprintf("setting the shaping of listener %q", name), http.MethodPut, "/v1/listeners/"+url.PathEscape(name)+"/shaping", nil, sh, &li, http.StatusOK)
	return li, err
}

// AddRules adds rules, all or none, and returns them as stored (with ids).
func (c *Client) AddRules(ctx context.Context, rs ...rules.Rule) ([]rules.Rule, error) {
	if rs == nil {
		rs = []rules.Rule{}
	}
	var out emuapi.RulesResponse
	err := c.call(ctx, "adding rules", http.MethodPost, "/v1/rules", nil, rs, &out, http.StatusCreated)
	return out.Rules, err
}

// Rules lists the rules with their counters.
func (c *Client) Rules(ctx context.Context) ([]rules.Status, error) {
	var out []rules.Status
	err := c.call(ctx, "listing rules", http.MethodGet, "/v1/rules", nil, nil, &out, http.StatusOK)
	return out, err
}

// DeleteRule removes one rule; an unknown id is a 404 APIError.
func (c *Client) DeleteRule(ctx context.Context, id string) error {
	return c.call(ctx, fmt.Sprintf("deleting rule %q", id), http.MethodDelete, "/v1/rules/"+url.PathEscape(id), nil, nil, nil, http.StatusNoContent)
}

// DeleteRules removes every rule and returns how many there were.
func (c *Client) DeleteRules(ctx context.Context) (int, error) {
	var out emuapi.DeletedResponse
	err := c.call(ctx, "deleting rules", http.MethodDelete, "/v1/rules", nil, nil, &out, http.StatusOK)
	return out.Deleted, err
}

// PutObjects configures objects, all or none.
func (c *Client) PutObjects(ctx context.Context, specs ...objects.Spec) error {
	if specs == nil {
		specs = []objects.Spec{}
	}
	return c.call(ctx, "putting objects", http.MethodPut, "/v1/objects", nil, specs, nil, http.StatusNoContent)
}

// Objects lists the configured objects by path.
func (c *Client) Objects(ctx context.Context) ([]objects.Spec, error) {
	var out []objects.Spec
	err := c.call(ctx, "listing objects", http.MethodGet, "/v1/objects", nil, nil, &out, http.StatusOK)
	return out, err
}

// DeleteObject forgets path's configuration; an unconfigured path is a 404
// APIError.
func (c *Client) DeleteObject(ctx context.Context, path string) error {
	return c.call(ctx, fmt.Sprintf("deleting object %q", path), http.MethodDelete, "/v1/objects", url.Values{"path": {path}}, nil, nil, http.StatusNoContent)
}

// Journal returns the journal records q selects.
func (c *Client) Journal(ctx context.Context, q journal.Query) (journal.Snapshot, error) {
	var out journal.Snapshot
	err := c.call(ctx, "querying the journal", http.MethodGet, "/v1/journal", queryValues(q), nil, &out, http.StatusOK)
	return out, err
}

// ClearJournal forgets every journal record.
func (c *Client) ClearJournal(ctx context.Context) error {
	return c.call(ctx, "clearing the journal", http.MethodDelete, "/v1/journal", nil, nil, nil, http.StatusNoContent)
}

// WaitRequests blocks until at least n requests match q (q.Limit is
// ignored) and returns them. When ctx ends first it returns what matched so
// far with an error wrapping ctx's.
func (c *Client) WaitRequests(ctx context.Context, q journal.Query, n int) ([]journal.Request, error) {
	return c.wait(ctx, q, n, false)
}

// WaitEnded is WaitRequests counting only requests whose exchange has ended.
func (c *Client) WaitEnded(ctx context.Context, q journal.Query, n int) ([]journal.Request, error) {
	return c.wait(ctx, q, n, true)
}

func (c *Client) wait(ctx context.Context, q journal.Query, n int, ended bool) ([]journal.Request, error) {
	what := "requests"
	if ended {
		what = "ended requests"
	}
	op := fmt.Sprintf("waiting for %d %s matching %s", n, what, describe(q))
	if n < 1 {
		return nil, fmt.Errorf("%s: n must be >= 1", op)
	}
	var last []journal.Request
	for {
		timeout := c.poll
		if dl, ok := ctx.Deadline(); ok {
			// Leave the server time to answer before the deadline.
			left := time.Until(dl)
			timeout = min(timeout, left-min(left/10, time.Second))
		}
		if err := ctx.Err(); err != nil || timeout < time.Millisecond {
			if err == nil {
				err = context.DeadlineExceeded
			}
			return last, fmt.Errorf("%s: %d matched: %w", op, len(last), err)
		}
		v := queryValues(q)
		v.Del("limit")
		v.Set("n", strconv.Itoa(n))
		v.Set("ended", strconv.FormatBool(ended))
		v.Set("timeout", timeout.Truncate(time.Millisecond).String())
		reqs, done, err := c.poll1(ctx, op, v)
		if err != nil {
			if ctx.Err() != nil {
				return last, fmt.Errorf("%s: %d matched: %w", op, len(last), ctx.Err())
			}
			return reqs, err
		}
		last = reqs
		if done {
			return reqs, nil
		}
	}
}

// poll1 is one long-poll: done is false when it timed out.
func (c *Client) poll1(ctx context.Context, op string, v url.Values) (reqs []journal.Request, done bool, err error) {
	resp, err := c.do(ctx, op, http.MethodGet, "/v1/journal/wait", v, nil)
	if err != nil {
		return nil, false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		var out emuapi.WaitResponse
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			return nil, false, fmt.Errorf("%s: decoding the answer: %w", op, err)
		}
		return out.Requests, true, nil
	case http.StatusRequestTimeout:
		var body emuapi.ErrorResponse
		ae := readAPIError(resp, &body)
		if body.Matched == nil {
			return nil, false, fmt.Errorf("%s: %w", op, ae)
		}
		return body.Requests, false, nil
	}
	return nil, false, fmt.Errorf("%s: %w", op, readAPIError(resp, nil))
}

func queryValues(q journal.Query) url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("listener", q.Listener)
	set("pathPrefix", q.PathPrefix)
	set("method", q.Method)
	if q.AfterSeq > 0 {
		v.Set("after", strconv.FormatUint(q.AfterSeq, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// describe is q for error messages.
func describe(q journal.Query) string {
	if s := queryValues(q).Encode(); s != "" {
		return "{" + s + "}"
	}
	return "{}"
}

// Holds lists the barriers that have requests waiting.
func (c *Client) Holds(ctx context.Context) ([]emuapi.HoldStatus, error) {
	var out []emuapi.HoldStatus
	err := c.call(ctx, "listing holds", http.MethodGet, "/v1/holds", nil, nil, &out, http.StatusOK)
	return out, err
}

// Release lets every request waiting at the named hold go and returns how
// many there were.
func (c *Client) Release(ctx context.Context, name string) (int, error) {
	var out emuapi.ReleaseResponse
	err := c.call(ctx, fmt.Sprintf("releasing hold %q", name), http.MethodPost, "/v1/holds/"+url.PathEscape(name)+"/release", nil, nil, &out, http.StatusOK)
	return out.Released, err
}

// Reset removes every rule and object configuration, releases every hold
// and clears the journal.
func (c *Client) Reset(ctx context.Context) error {
	return c.call(ctx, "resetting the emulator", http.MethodPost, "/v1/reset", nil, nil, nil, http.StatusNoContent)
}

// CAPEM returns the emulator's test CA certificate as PEM.
func (c *Client) CAPEM(ctx context.Context) ([]byte, error) {
	const op = "fetching the CA certificate"
	resp, err := c.do(ctx, op, http.MethodGet, "/v1/ca.pem", nil, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %w", op, readAPIError(resp, nil))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, emuapi.MaxBodyBytes))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return b, nil
}

// CertPool returns a pool trusting the emulator's test CA.
func (c *Client) CertPool(ctx context.Context) (*x509.CertPool, error) {
	pem, err := c.CAPEM(ctx)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("fetching the CA certificate: the answer holds no PEM certificate")
	}
	return pool, nil
}
