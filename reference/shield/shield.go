// Package shield is the reference edge cache's parent tier (SHD-1, SHD-2 of
// ../shared/spec/behaviour.md): a node started with a shield sends its
// cache fills to another edgecache node instead of the origin. The shield
// node routes the request itself and applies the service's origin
// configuration (retries, failover, timeouts, redirects, signing), so a fill
// to a shield is one plain HTTP request carrying the client's method, Host,
// request-target and headers as the client sent them; the edge adds only
// its own cache-fill headers (Range, conditional headers).
//
// Which shield a fill uses (SHD-2, EXT): [Tiers.For] picks the shield mapped
// to the primary origin's flexShielding region, else the default shield,
// else none (the node fills from the origin itself).
//
// The result has the fetch engine's shape ([fetch.Result]) so the edge's
// cache treats both alike: a shield that cannot be reached gives a
// synthesized 502 (its RFC 9209 reason from package upstream's
// classification, the same as for an origin) and a shield that times out a
// 504; the attempt's outcome is package outcome's, as for an origin attempt.
// The shield's own 502/504 pass through as responses.
package shield

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/outcome"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

const (
	// TierHeader marks a fill from a child tier; its value is the child
	// node's name. A node removes it before anything goes to an origin.
	TierHeader = "Edgeconform-Tier"
	// UncacheableHeader is a parent's answer to a child tier: the object
	// must not be stored, for a reason only the parent could see in the
	// origin's response (RNG-1: no Date, no Content-Length, ...), since the
	// parent's own response to the child has them. The child removes it.
	UncacheableHeader = "Edgeconform-Uncacheable"
)

// Tiers maps origins to their shield node.
type Tiers struct {
	// Default is the shield for every origin without a region mapping
	// (--shield); nil means those origins are filled directly.
	Default *url.URL
	// Regions maps a flexShielding region (AFRICA_SOUTH1, ...) to the
	// shield node that stands for it (--shield-region REGION=URL).
	Regions map[string]*url.URL
}

// Empty reports whether no shield is configured.
func (t Tiers) Empty() bool { return t.Default == nil && len(t.Regions) == 0 }

// For returns the shield for an origin, or nil for none.
func (t Tiers) For(o config.Origin) *url.URL {
	if o.FlexShielding != nil {
		for _, r := range o.FlexShielding.FlexShieldingRegions {
			if u, ok := t.Regions[r]; ok {
				return u
			}
		}
	}
	return t.Default
}

// ParseURL checks a shield node's base URL: http or https, a host, no
// query or fragment.
func ParseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("shield URL %q: %w", s, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("shield URL %q: scheme must be http or https", s)
	case u.Host == "":
		return nil, fmt.Errorf("shield URL %q: no host", s)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("shield URL %q: must not have a query or fragment", s)
	case u.Path != "" && u.Path != "/":
		return nil, fmt.Errorf("shield URL %q: must not have a path", s)
	}
	u.Path = ""
	return u, nil
}

// Request is a fill as the client asked for it.
type Request struct {
	Method     string
	Host       string      // the client's Host
	RequestURI string      // the client's request-target (path and query)
	Header     http.Header // the client's headers less hop-by-hop ones, plus the fill's own
	RequestID  string
	// Body and ContentLength are the client's request body (nil for none)
	// and its length (-1 unknown).
	Body          io.Reader
	ContentLength int64
}

// Client sends fills to shield nodes. It is safe for concurrent use.
type Client struct {
	hc  *http.Client
	log *slog.Logger
}

// NewClient returns a client with its own connection pool. log nil means
// slog.Default().
func NewClient(log *slog.Logger) *Client {
	if log == nil {
		log = slog.Default()
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &Client{hc: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // a redirect is the shield's answer, passed on
	}}, log: log}
}

// Close drops idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Fetch sends req to the shield at base. ctx bounds the whole exchange,
// body included.
func (c *Client) Fetch(ctx context.Context, base *url.URL, req Request) *fetch.Result {
	name := "shield:" + base.Host
	res := &fetch.Result{Origin: name}
	a := fetch.Attempt{N: 1, Origin: name, Address: base.Host, Host: req.Host, Protocol: "HTTP/1.1", Start: time.Now()}
	target := base.String() + req.RequestURI
	if !strings.HasPrefix(req.RequestURI, "/") {
		target = base.String() + "/" + req.RequestURI
	}
	hreq, err := http.NewRequestWithContext(ctx, req.Method, target, req.Body)
	if err == nil {
		hreq.Host = req.Host
		if req.Body != nil {
			hreq.ContentLength = req.ContentLength
		}
		hreq.Header = req.Header.Clone()
		var resp *http.Response
		resp, err = c.hc.Do(hreq)
		if err == nil {
			a.Duration, a.Status, a.Outcome = time.Since(a.Start), resp.StatusCode, outcome.Outcome{Kind: outcome.Usable}
			res.Response, res.Status, res.Attempts = resp, resp.StatusCode, []fetch.Attempt{a}
			c.record(req, a)
			return res
		}
	}
	a.Duration, a.Err = time.Since(a.Start), err.Error()
	a.Outcome = failed(ctx, err)
	res.Status, res.Reason = http.StatusBadGateway, a.Outcome.Reason
	if a.Outcome.Kind == outcome.Timeout {
		res.Status = http.StatusGatewayTimeout
	}
	res.Attempts = []fetch.Attempt{a}
	c.record(req, a)
	return res
}

// failed is the outcome of a fill to a shield that got no response: the
// client went away, the shield did not answer in time (a 504), or the
// connection failed, named as package upstream names an origin's
// connection failures.
func failed(ctx context.Context, err error) outcome.Outcome {
	var nerr net.Error
	switch {
	case ctx.Err() != nil:
		return outcome.Outcome{Kind: outcome.Canceled, Reason: outcome.ClientGone}
	case errors.As(err, &nerr) && nerr.Timeout():
		return outcome.Outcome{Kind: outcome.Timeout, Reason: outcome.ConnectionTimeout}
	}
	return outcome.Outcome{Kind: outcome.ConnectFailure, Reason: outcome.Reason(upstream.Reason(err))}
}

func (c *Client) record(req Request, a fetch.Attempt) {
	attrs := []any{"request_id", req.RequestID, "shield", a.Address, "host", a.Host, "uri", req.RequestURI,
		"status", a.Status, "outcome", a.Outcome.String(), "latency_ms", a.Duration.Milliseconds()}
	if a.Err != "" {
		attrs = append(attrs, "err", a.Err)
	}
	c.log.Info("shield fill", attrs...)
}
