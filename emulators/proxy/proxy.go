// Package proxy is a listener backend that forwards every request to an
// upstream origin (HTTP or HTTPS), streaming both ways, so the emulator's
// rules, holds and journal apply in front of a real server: a CDN under
// test sees the upstream's objects with injected faults. The journal
// records what the CDN sent (as for every request) and what the upstream
// answered (journal.Upstream).
package proxy

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/wire"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// Config says where to forward.
type Config struct {
	// URL is the upstream's base URL, http:// or https://; a path in it
	// is put before every request's path.
	URL string `json:"url"`
	// Host, if set, is the Host header (and TLS server name) sent
	// upstream; default the URL's host.
	Host string `json:"host,omitempty"`
	// CAFile is a PEM file of extra roots to trust for an https upstream
	// (the system roots stay trusted).
	CAFile string `json:"caFile,omitempty"`
	// RootCAs, if set, replaces the trusted roots (Go API only).
	RootCAs *x509.CertPool `json:"-"`
	// ConnectTimeout bounds connecting to the upstream (default 10s).
	ConnectTimeout time.Duration `json:"-"`
}

// Validate checks c; field paths start with prefix.
func (c *Config) Validate(prefix string) error {
	l := &fielderr.List{Prefix: prefix}
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		l.Add("url", "is required (the upstream, e.g. http://127.0.0.1:8080)")
	case err != nil:
		l.Add("url", "is not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		l.Add("url", "must be http:// or https://, got %q", c.URL)
	case u.Host == "":
		l.Add("url", "has no host: %q", c.URL)
	case u.RawQuery != "" || u.Fragment != "":
		l.Add("url", "must not have a query or fragment: %q", c.URL)
	}
	if objects.BadValue(c.Host) || strings.ContainsAny(c.Host, " /") {
		l.Add("host", "is not a host name: %q", c.Host)
	}
	if c.CAFile != "" {
		if _, err := os.ReadFile(c.CAFile); err != nil {
			l.Add("caFile", "cannot be read: %v", err)
		}
	}
	return l.Err()
}

// Proxy is the backend.
type Proxy struct {
	cfg    Config
	target *url.URL
	rp     *httputil.ReverseProxy
	tr     *http.Transport
}

// New checks cfg and returns the backend.
func New(cfg Config, logger *slog.Logger) (*Proxy, error) {
	if err := cfg.Validate(""); err != nil {
		return nil, fmt.Errorf("proxy config: %w", err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	target, _ := url.Parse(cfg.URL)
	roots := cfg.RootCAs
	if roots == nil && cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("proxy config: caFile: %w", err)
		}
		if roots, err = x509.SystemCertPool(); err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("proxy config: caFile: %s holds no PEM certificate", cfg.CAFile)
		}
	}
	serverName := target.Hostname()
	if cfg.Host != "" {
		serverName = cfg.Host
		if h, _, ok := strings.Cut(cfg.Host, ":"); ok {
			serverName = h
		}
	}
	connectTimeout := cfg.ConnectTimeout
	if connectTimeout <= 0 {
		connectTimeout = 10 * time.Second
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12}
	tr.TLSHandshakeTimeout = connectTimeout
	tr.ResponseHeaderTimeout = 0 // the CDN's own timeouts decide
	tr.DisableCompression = true // bytes pass as the upstream sent them
	p := &Proxy{cfg: cfg, target: target, tr: tr}
	p.rp = &httputil.ReverseProxy{
		Transport: tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			if cfg.Host != "" {
				pr.Out.Host = cfg.Host
			}
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.Header.Get("Date") == "" {
				// As net/http's server would (RNG-1 needs one).
				resp.Header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
			}
			journal.RecordUpstream(resp.Request.Context(), journal.Upstream{
				URL: resp.Request.URL.String(), Host: resp.Request.Host,
				Status: resp.StatusCode, Headers: fields(resp.Header),
			})
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, r.Context().Err()) && r.Context().Err() != nil {
				return // the CDN went away: nobody to answer
			}
			journal.RecordUpstream(r.Context(), journal.Upstream{URL: target.JoinPath(r.URL.Path).String(), Host: upstreamHost(cfg, target), Error: err.Error()})
			msg := fmt.Sprintf("originemu proxy: upstream %s: %v\n", target.Redacted(), err)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Content-Length", fmt.Sprint(len(msg)))
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte(msg))
		},
		// Copy errors (a rule's cut, the CDN going away) are the
		// exchange's business: the journal has them.
		ErrorLog: log.New(slogWriter{logger}, "", 0),
	}
	return p, nil
}

func upstreamHost(cfg Config, target *url.URL) string {
	if cfg.Host != "" {
		return cfg.Host
	}
	return target.Host
}

// ServeHTTP forwards r upstream and streams the answer back.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Del("Date") // the upstream's, or one set when it has none
	p.rp.ServeHTTP(w, r)
}

// Close drops idle upstream connections.
func (p *Proxy) Close() { p.tr.CloseIdleConnections() }

// Target is the upstream URL.
func (p *Proxy) Target() string { return p.target.String() }

func fields(h http.Header) []wire.HeaderField {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []wire.HeaderField
	for _, k := range names {
		for _, v := range h[k] {
			out = append(out, wire.HeaderField{Name: k, Value: v})
		}
	}
	return out
}

type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug("originemu proxy", "msg", strings.TrimSpace(string(p)))
	return len(p), nil
}
