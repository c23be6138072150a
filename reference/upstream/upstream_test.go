package upstream

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/reference/config"
)

// startEmu runs one listener per profile, named after it.
func startEmu(t *testing.T) *originemu.Emulator {
	t.Helper()
	cfg := originemu.Config{Logger: slog.New(slog.DiscardHandler)}
	for _, p := range originemu.Profiles {
		cfg.Listeners = append(cfg.Listeners, originemu.ListenerConfig{Name: string(p), Profile: p})
	}
	e, err := originemu.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("starting emulator: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func newClient(t *testing.T, e *originemu.Emulator) *Client {
	t.Helper()
	c := New(Options{
		RootCAs: e.CA().Pool(),
		Resolve: map[string]string{"origin.test": "127.0.0.1", "media.example.com": "127.0.0.1"},
		Logger:  slog.New(slog.DiscardHandler),
	})
	t.Cleanup(c.Close)
	return c
}

func port(t *testing.T, e *originemu.Emulator, listener string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(e.Addr(listener))
	if err != nil {
		t.Fatalf("listener %q: %v", listener, err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

func target(t *testing.T, e *originemu.Emulator, protocol, listener, host string) Target {
	return Target{Protocol: protocol, Address: "origin.test", Port: port(t, e, listener), Host: host}
}

func newReq(t *testing.T, method, pathQuery string, hdr ...string) *http.Request {
	t.Helper()
	u, err := url.ParseRequestURI(pathQuery)
	if err != nil {
		t.Fatal(err)
	}
	r := &http.Request{Method: method, URL: u, Header: http.Header{}}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	return r
}

func roundTrip(t *testing.T, c *Client, tgt Target, r *http.Request) (*http.Response, []byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.RoundTrip(ctx, tgt, r)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

func waitEnded(t *testing.T, e *originemu.Emulator, q journal.Query, n int) []journal.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reqs, err := e.Journal().WaitEnded(ctx, q, n)
	if err != nil {
		t.Fatalf("waiting for %d requests matching %+v: %v (have %d)", n, q, err, len(reqs))
	}
	return reqs
}

func header(r journal.Request, name string) []string {
	var out []string
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, name) {
			out = append(out, h.Value)
		}
	}
	return out
}

// PRT-1, PRT-2, HST-3: each protocol speaks what it must, offers only its
// ALPN, sends Host and SNI from the target's host.
func TestProtocols(t *testing.T) {
	e := startEmu(t)
	c := newClient(t, e)
	tests := []struct {
		protocol, listener string
		wantProto          string
		wantOffered        []string
		wantALPN           string
	}{
		{config.ProtocolHTTP, "http", "HTTP/1.1", nil, ""},
		{config.ProtocolHTTPS, "https", "HTTP/1.1", []string{"http/1.1"}, "http/1.1"},
		{config.ProtocolHTTP2, "h2", "HTTP/2.0", []string{"h2"}, "h2"},
	}
	for _, tc := range tests {
		t.Run(tc.protocol, func(t *testing.T) {
			path := "/proto/" + tc.protocol
			resp, body, err := roundTrip(t, c, target(t, e, tc.protocol, tc.listener, "media.example.com"), newReq(t, "GET", path+"?q=1", "X-A", "1"))
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			if resp.StatusCode != 200 || resp.Proto != tc.wantProto || len(body) != 1024 {
				t.Fatalf("got %d %s %d bytes, want 200 %s 1024", resp.StatusCode, resp.Proto, len(body), tc.wantProto)
			}
			snap := e.Journal().Query(journal.Query{PathPrefix: path})
			if len(snap.Requests) != 1 || len(snap.Conns) != 1 {
				t.Fatalf("journal: %d requests, %d conns", len(snap.Requests), len(snap.Conns))
			}
			r, conn := snap.Requests[0], snap.Conns[0]
			if r.Proto != tc.wantProto || r.Host != "media.example.com" || r.URI != path+"?q=1" {
				t.Errorf("origin saw %s %s host %q", r.Proto, r.URI, r.Host)
			}
			if !slices.Equal(conn.OfferedALPN, tc.wantOffered) || conn.ALPN != tc.wantALPN {
				t.Errorf("ALPN offered %q negotiated %q, want %q and %q", conn.OfferedALPN, conn.ALPN, tc.wantOffered, tc.wantALPN)
			}
			if tc.wantALPN != "" && conn.SNI != "media.example.com" {
				t.Errorf("SNI %q, want media.example.com (HST-3)", conn.SNI)
			}
			for _, h := range []string{"Accept-Encoding", "User-Agent"} {
				if v := header(r, h); v != nil {
					t.Errorf("client added %s: %q", h, v)
				}
			}
		})
	}
}

// PRT-1: HTTP2 offers only h2 and does not fall back; PRT-2: HTTPS never
// speaks h2. Either mismatch is a connect failure.
func TestALPNMismatchIsConnectFailure(t *testing.T) {
	e := startEmu(t)
	c := newClient(t, e)
	for _, tc := range []struct{ protocol, listener string }{
		{config.ProtocolHTTP2, "https"}, // origin offers only http/1.1
		{config.ProtocolHTTPS, "h2"},    // origin accepts only h2
	} {
		t.Run(tc.protocol+"->"+tc.listener, func(t *testing.T) {
			_, _, err := roundTrip(t, c, target(t, e, tc.protocol, tc.listener, "origin.test"), newReq(t, "GET", "/alpn"))
			if !IsConnectFailure(err) {
				t.Fatalf("err = %v, want a connect failure", err)
			}
			if r := Reason(err); !strings.HasPrefix(r, "tls_") {
				t.Errorf("reason %q, want a tls_ reason", r)
			}
		})
	}
	if n := len(e.Journal().Query(journal.Query{PathPrefix: "/alpn"}).Requests); n != 0 {
		t.Fatalf("origin journaled %d requests", n)
	}
}

// PRT-4: every invalid certificate is a connect failure, on both TLS
// protocols; HST-3: verification is against the target's host.
func TestTLSFaults(t *testing.T) {
	e := startEmu(t)
	c := newClient(t, e)
	for _, listener := range []string{"tls-expired", "tls-wrong-name", "tls-untrusted"} {
		for _, protocol := range []string{config.ProtocolHTTPS, config.ProtocolHTTP2} {
			t.Run(listener+"/"+protocol, func(t *testing.T) {
				_, _, err := roundTrip(t, c, target(t, e, protocol, listener, "origin.test"), newReq(t, "GET", "/tls"))
				if !IsConnectFailure(err) || Reason(err) != "tls_certificate_error" {
					t.Fatalf("err = %v (reason %q), want a connect failure with tls_certificate_error", err, Reason(err))
				}
			})
		}
	}
	// The serving listener's certificate names the SNI it was asked for,
	// so a good name passes; an IP-literal host gets no SNI and is verified
	// against the IP SAN.
	for _, host := range []string{"origin.test", "127.0.0.1"} {
		t.Run("valid/"+host, func(t *testing.T) {
			path := "/tls-ok/" + host
			resp, _, err := roundTrip(t, c, target(t, e, config.ProtocolHTTPS, "https", host), newReq(t, "GET", path))
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("RoundTrip: %v", err)
			}
			conns := e.Journal().Query(journal.Query{PathPrefix: path}).Conns
			wantSNI := host
			if host == "127.0.0.1" {
				wantSNI = ""
			}
			if len(conns) != 1 || conns[0].SNI != wantSNI {
				t.Fatalf("conns %+v, want SNI %q", conns, wantSNI)
			}
		})
	}
}

func TestConnectionFaults(t *testing.T) {
	e := startEmu(t)
	c := newClient(t, e)
	timeout := 300 * time.Millisecond
	tests := []struct {
		name, protocol, listener string
		address                  string
		wantReason               string
		timeout                  bool
	}{
		{"refused", config.ProtocolHTTP, "refuse", "", "connection_refused", false},
		{"syn-drop", config.ProtocolHTTPS, "syn-drop", "", "connection_timeout", true},
		{"blackhole-tls", config.ProtocolHTTP2, "blackhole", "", "connection_timeout", true},
		{"blackhole-http", config.ProtocolHTTP, "blackhole", "", "http_response_timeout", true},
		{"dns", config.ProtocolHTTP, "http", "no-such-host.invalid", "dns_error", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tgt := Target{Protocol: tc.protocol, Address: "origin.test", Host: "origin.test"}
			tgt.Port = port(t, e, tc.listener)
			if tc.address != "" {
				tgt.Address = tc.address
			}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			start := time.Now() // before the timer: it cannot fire sooner than timeout after start
			timer := time.AfterFunc(timeout, func() { cancel(ErrConnectTimeout) })
			defer timer.Stop()
			_, err := c.RoundTrip(ctx, tgt, newReq(t, "GET", "/fault"))
			took := time.Since(start)
			if !IsConnectFailure(err) || Reason(err) != tc.wantReason {
				t.Fatalf("err = %v (reason %q), want a connect failure with %s", err, Reason(err), tc.wantReason)
			}
			if tc.timeout && (took < timeout || took > timeout+time.Second) {
				t.Errorf("took %v, want about %v", took, timeout)
			}
			if tc.timeout && !errors.Is(err, ErrConnectTimeout) {
				t.Errorf("err %v does not wrap ErrConnectTimeout", err)
			}
		})
	}
	t.Run("canceled-is-not-connect-failure", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := c.RoundTrip(ctx, target(t, e, config.ProtocolHTTP, "blackhole", "origin.test"), newReq(t, "GET", "/x"))
		if err == nil || IsConnectFailure(err) || Reason(err) != "canceled" {
			t.Fatalf("err = %v (reason %q), want canceled, not a connect failure", err, Reason(err))
		}
	})
	t.Run("context-deadline-is-connect-timeout", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := c.RoundTrip(ctx, target(t, e, config.ProtocolHTTP, "blackhole", "origin.test"), newReq(t, "GET", "/x"))
		if !IsConnectFailure(err) {
			t.Fatalf("err = %v, want a connect failure", err)
		}
	})
}

// INT: a connection that breaks before the response headers is a connect
// failure, on HTTP/1.1 (TCP reset) and h2 (RST_STREAM, GOAWAY).
func TestBrokenBeforeHeaders(t *testing.T) {
	e := startEmu(t)
	c := newClient(t, e)
	tests := []struct {
		name, protocol, listener string
		action                   rules.Action
	}{
		{"http1-reset", config.ProtocolHTTP, "http", rules.Action{Reset: &rules.Cut{}}},
		{"https-reset", config.ProtocolHTTPS, "https", rules.Action{Reset: &rules.Cut{}}},
		{"h2-reset", config.ProtocolHTTP2, "h2", rules.Action{Reset: &rules.Cut{}}},
		{"h2-rst-stream", config.ProtocolHTTP2, "h2", rules.Action{RSTStream: &rules.Cut{Code: "INTERNAL_ERROR"}}},
		{"h2-goaway", config.ProtocolHTTP2, "h2", rules.Action{GoAway: &rules.Cut{Code: "INTERNAL_ERROR"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "/broken/" + tc.name
			if _, err := e.AddRules(rules.Rule{Match: rules.Match{Path: path}, Action: tc.action}); err != nil {
				t.Fatal(err)
			}
			_, _, err := roundTrip(t, c, target(t, e, tc.protocol, tc.listener, "origin.test"), newReq(t, "GET", path))
			if !IsConnectFailure(err) || Reason(err) != "connection_terminated" {
				t.Fatalf("err = %v (reason %q), want a connect failure, connection_terminated", err, Reason(err))
			}
		})
	}
}

// PRT-5: no TE or other hop-by-hop headers reach the origin; client headers
// do, in order; no redirects are followed; connections are reused per
// target.
func TestRequestShapeAndReuse(t *testing.T) {
	e := startEmu(t)
	c := newClient(t, e)
	for _, tc := range []struct{ protocol, listener string }{
		{config.ProtocolHTTP, "http"}, {config.ProtocolHTTPS, "https"}, {config.ProtocolHTTP2, "h2"},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			path := "/shape/" + tc.protocol
			if _, err := e.AddRules(rules.Rule{Match: rules.Match{Path: path + "/redirect"}, Action: rules.Action{Redirect: &rules.Redirect{Status: 302, Location: "/elsewhere"}}}); err != nil {
				t.Fatal(err)
			}
			tgt := target(t, e, tc.protocol, tc.listener, "origin.test")
			r := newReq(t, "GET", path+"/a", "TE", "trailers", "Connection", "X-Hop", "X-Hop", "1", "Keep-Alive", "timeout=5",
				"X-Keep", "yes", "User-Agent", "client/1", "Accept-Encoding", "br")
			if _, _, err := roundTrip(t, c, tgt, r); err != nil {
				t.Fatal(err)
			}
			resp, _, err := roundTrip(t, c, tgt, newReq(t, "GET", path+"/redirect"))
			if err != nil || resp.StatusCode != 302 || resp.Header.Get("Location") != "/elsewhere" {
				t.Fatalf("redirect: %v %v", resp, err)
			}
			// A different host is a different connection.
			tgt2 := tgt
			tgt2.Host = "media.example.com"
			if _, _, err := roundTrip(t, c, tgt2, newReq(t, "GET", path+"/b")); err != nil {
				t.Fatal(err)
			}
			reqs := waitEnded(t, e, journal.Query{PathPrefix: path}, 3)
			first := reqs[0]
			for _, h := range []string{"TE", "Connection", "X-Hop", "Keep-Alive"} {
				if v := header(first, h); v != nil {
					t.Errorf("origin got %s: %q", h, v)
				}
			}
			if header(first, "X-Keep") == nil || !slices.Equal(header(first, "User-Agent"), []string{"client/1"}) ||
				!slices.Equal(header(first, "Accept-Encoding"), []string{"br"}) {
				t.Errorf("end-to-end headers not forwarded as is: %v", first.Headers)
			}
			if n := len(e.Journal().Query(journal.Query{PathPrefix: path + "/elsewhere"}).Requests); n != 0 {
				t.Errorf("redirect was followed")
			}
			if reqs[0].ConnID != reqs[1].ConnID || reqs[2].ConnID == reqs[0].ConnID {
				t.Errorf("connections %d %d %d: want the first two shared and the third (other host) separate",
					reqs[0].ConnID, reqs[1].ConnID, reqs[2].ConnID)
			}
		})
	}
}

// No proxy from the environment.
func TestIgnoresProxyEnvironment(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	e := startEmu(t)
	c := newClient(t, e)
	if _, _, err := roundTrip(t, c, target(t, e, config.ProtocolHTTP, "http", "origin.test"), newReq(t, "GET", "/noproxy")); err != nil {
		t.Fatal(err)
	}
}

func TestBadInput(t *testing.T) {
	c := New(Options{Logger: slog.New(slog.DiscardHandler)})
	defer c.Close()
	for _, tc := range []struct {
		name   string
		tgt    Target
		hdr    []string
		reason string
	}{
		{"protocol", Target{Protocol: "QUIC", Address: "x", Port: 1}, nil, "proxy_configuration_error"},
		{"port", Target{Protocol: config.ProtocolHTTP, Address: "x"}, nil, "proxy_configuration_error"},
		{"host", Target{Protocol: config.ProtocolHTTP, Address: "x", Port: 80, Host: "bad host"}, nil, "http_request_error"},
		{"header", Target{Protocol: config.ProtocolHTTP, Address: "x", Port: 80}, []string{"X-Bad", "a\nb"}, "http_request_error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.RoundTrip(context.Background(), tc.tgt, newReq(t, "GET", "/", tc.hdr...))
			if IsConnectFailure(err) || Reason(err) != tc.reason {
				t.Fatalf("err = %v (reason %q), want %s and no connect failure", err, Reason(err), tc.reason)
			}
		})
	}
}

// ATT-3, ATT-4: a reused keep-alive connection that the origin resets
// before answering is one failed attempt: net/http's transport must not
// resend the GET on a new connection behind the attempt loop's back.
func TestNoHiddenRetryOnReusedConnection(t *testing.T) {
	e := startEmu(t)
	c := newClient(t, e)
	for _, tc := range []struct{ protocol, listener string }{
		{config.ProtocolHTTP, "http"},
		{config.ProtocolHTTPS, "https"},
	} {
		t.Run(tc.listener, func(t *testing.T) {
			tgt := target(t, e, tc.protocol, tc.listener, "origin.test")
			warm := "/warm/" + tc.listener
			if _, _, err := roundTrip(t, c, tgt, newReq(t, "GET", warm)); err != nil {
				t.Fatalf("warming the connection: %v", err)
			}
			path := "/reused-reset/" + tc.listener
			if _, err := e.AddRules(rules.Rule{Match: rules.Match{Path: path}, Times: 3, Action: rules.Action{Reset: &rules.Cut{}}}); err != nil {
				t.Fatal(err)
			}
			_, _, err := roundTrip(t, c, tgt, newReq(t, "GET", path))
			if err == nil {
				t.Fatal("a reset before headers succeeded")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			reqs, _ := e.Journal().WaitEnded(ctx, journal.Query{PathPrefix: path}, 1)
			if n := len(e.Journal().Query(journal.Query{PathPrefix: path}).Requests); n != 1 || len(reqs) != 1 {
				t.Fatalf("the origin saw %d requests for one attempt, want 1", n)
			}
			if reqs[0].ConnID != e.Journal().Query(journal.Query{PathPrefix: warm}).Requests[0].ConnID {
				t.Fatal("the attempt did not reuse the warm connection: the test proves nothing")
			}
		})
	}
}

// ATT-3, ATT-4, ATT-5 (INT): an h2 origin that refuses the stream
// (RST_STREAM REFUSED_STREAM) or says GOAWAY before answering is one
// failed attempt, a connect failure: the h2 transport must not resend the
// request behind the attempt loop's back.
func TestH2NoHiddenRetry(t *testing.T) {
	e := startEmu(t)
	c := newClient(t, e)
	for _, tc := range []struct {
		name   string
		action rules.Action
	}{
		{"refused-stream", rules.Action{RSTStream: &rules.Cut{Code: "REFUSED_STREAM"}}},
		{"goaway-no-error", rules.Action{GoAway: &rules.Cut{Code: "NO_ERROR"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/h2-no-retry/" + tc.name
			if _, err := e.AddRules(rules.Rule{Match: rules.Match{Path: path}, Unlimited: true, Action: tc.action}); err != nil {
				t.Fatal(err)
			}
			_, _, err := roundTrip(t, c, target(t, e, config.ProtocolHTTP2, "h2", "origin.test"), newReq(t, "GET", path))
			if !IsConnectFailure(err) {
				t.Fatalf("err = %v (reason %q), want a connect failure", err, Reason(err))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			e.Journal().WaitEnded(ctx, journal.Query{PathPrefix: path}, 1)
			if n := len(e.Journal().Query(journal.Query{PathPrefix: path}).Requests); n != 1 {
				t.Fatalf("the origin saw %d requests for one attempt, want 1", n)
			}
		})
	}
	// The connection is replaced after the GOAWAY: a next request works.
	if _, _, err := roundTrip(t, c, target(t, e, config.ProtocolHTTP2, "h2", "origin.test"), newReq(t, "GET", "/after")); err != nil {
		t.Fatalf("a request after the GOAWAY: %v", err)
	}
}

// PRT-3: concurrent h2 requests to one target share one connection
// (multiplexed streams), and all succeed.
func TestH2ConcurrentRequestsShareAConnection(t *testing.T) {
	e := startEmu(t)
	c := newClient(t, e)
	tgt := target(t, e, config.ProtocolHTTP2, "h2", "origin.test")
	if _, _, err := roundTrip(t, c, tgt, newReq(t, "GET", "/mux/warm")); err != nil {
		t.Fatal(err)
	}
	const n = 50
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, body, err := roundTrip(t, c, tgt, newReq(t, "GET", "/mux/"+strconv.Itoa(i)))
			if err == nil && len(body) != 1024 {
				err = errors.New("short body")
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	conns := map[uint64]bool{}
	for _, q := range e.Journal().Query(journal.Query{PathPrefix: "/mux/"}).Requests {
		conns[q.ConnID] = true
	}
	if len(conns) != 1 {
		t.Fatalf("%d requests used %d connections, want 1", n+1, len(conns))
	}
}
