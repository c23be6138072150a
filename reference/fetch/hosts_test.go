package fetch

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/reference/config"
)

func hostRewrite(h string) func(*config.EffectiveOrigin) {
	return func(o *config.EffectiveOrigin) { o.HostRewrite = h }
}

// HST-1, HST-3: the Host and the SNI the origin sees (the documentation's
// table); the certificate is verified against that name.
func TestHostAndSNI(t *testing.T) {
	l := newLab(t)
	tests := []struct {
		name, route, origin, want string
	}{
		{"client host", "", "", "media.example.com"},
		{"route rewrite", "svc.example.com", "", "svc.example.com"},
		{"origin rewrite", "", "origin.example.com", "origin.example.com"},
		{"origin beats route", "svc.example.com", "origin.example.com", "origin.example.com"},
	}
	for _, listener := range []string{"https", "h2"} {
		for _, tc := range tests {
			t.Run(listener+"/"+tc.name, func(t *testing.T) {
				path := "/host/" + listener + "/" + strings.ReplaceAll(tc.name, " ", "-")
				e := l.engine(l.origin("a", listener, hostRewrite(tc.origin)))
				r := get(path)
				r.RouteHostRewrite = tc.route
				f := l.fetch(e, "a", r)
				f.wantStatus(t, 200)
				snap := l.emu.Journal().Query(journal.Query{Listener: listener, PathPrefix: path})
				if len(snap.Requests) != 1 || snap.Requests[0].Host != tc.want || snap.Conns[0].SNI != tc.want {
					t.Fatalf("origin saw %+v / %+v, want Host and SNI %q", snap.Requests, snap.Conns, tc.want)
				}
				if f.Attempts[0].Host != tc.want {
					t.Errorf("attempt host %q", f.Attempts[0].Host)
				}
			})
		}
	}
	t.Run("certificate verified against the Host", func(t *testing.T) {
		e := l.engine(l.origin("a", "tls-wrong-name", hostRewrite("origin.example.com")))
		f := l.fetch(e, "a", get("/host/wrong"))
		f.wantStatus(t, 502)
		f.wantAttempts(t, "connect_failure:tls_certificate_error")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conns, err := l.emu.Journal().WaitConns(ctx, journal.Query{Listener: "tls-wrong-name"}, 1, nil)
		if err != nil || len(conns) != 1 || conns[0].SNI != "origin.example.com" {
			t.Fatalf("conns %+v", conns)
		}
	})
}

// HST-2: a failover sees the primary's Host unless it has its own
// hostRewrite.
func TestFailoverHost(t *testing.T) {
	l := newLab(t)
	tests := []struct {
		name           string
		route          string
		failoverHost   string
		wantOnFailover string
	}{
		{"same client host", "", "", "media.example.com"},
		{"same route rewrite", "svc.example.com", "", "svc.example.com"},
		{"own rewrite", "svc.example.com", "failover.example.com", "failover.example.com"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "/fohost/" + strings.ReplaceAll(tc.name, " ", "-")
			l.rule(rules.Rule{Match: rules.Match{Listener: "https", Path: path}, Action: rules.Action{Status: 503}})
			e := l.engine(
				l.origin("a", "https", retryOn(config.RetryGatewayError), failover("b")),
				l.origin("b", "h2", hostRewrite(tc.failoverHost)))
			r := get(path)
			r.RouteHostRewrite = tc.route
			f := l.fetch(e, "a", r)
			f.wantStatus(t, 200)
			primary := l.emu.Journal().Query(journal.Query{Listener: "https", PathPrefix: path})
			fo := l.emu.Journal().Query(journal.Query{Listener: "h2", PathPrefix: path})
			wantPrimary := tc.route
			if wantPrimary == "" {
				wantPrimary = "media.example.com"
			}
			if primary.Requests[0].Host != wantPrimary || fo.Requests[0].Host != tc.wantOnFailover || fo.Conns[0].SNI != tc.wantOnFailover {
				t.Fatalf("primary Host %q, failover Host %q SNI %q; want %q and %q", primary.Requests[0].Host,
					fo.Requests[0].Host, fo.Conns[0].SNI, wantPrimary, tc.wantOnFailover)
			}
		})
	}
}

// HST-6: an origin's requestHeadersToAdd apply to its attempts only, on top
// of the client's headers. PRT-5: no TE reaches the origin.
func TestOriginRequestHeaders(t *testing.T) {
	l := newLab(t)
	path := "/hdr"
	l.rule(rules.Rule{Match: rules.Match{Listener: "http", Path: path}, Action: rules.Action{Status: 503}})
	e := l.engine(
		l.origin("a", "http", retryOn(config.RetryGatewayError), failover("b"), func(o *config.EffectiveOrigin) {
			o.RequestHeaders = []config.HeaderToAdd{
				{HeaderName: "X-Origin", HeaderValue: "a"},
				{HeaderName: "X-Client", HeaderValue: "replaced", Replace: true},
				{HeaderName: "X-Multi", HeaderValue: "added"},
			}
		}),
		l.origin("b", "h2", func(o *config.EffectiveOrigin) {
			o.RequestHeaders = []config.HeaderToAdd{{HeaderName: "X-Failover", HeaderValue: "b"}}
		}))
	r := get(path)
	r.Header.Set("X-Client", "client")
	r.Header.Set("X-Multi", "client")
	r.Header.Set("TE", "trailers")
	f := l.fetch(e, "a", r)
	f.wantStatus(t, 200)
	reqs := l.waitEnded(journal.Query{PathPrefix: path}, 2)
	a, b := reqs[0], reqs[1]
	check := func(who string, r journal.Request, name string, want ...string) {
		t.Helper()
		if got := header(r, name); !slices.Equal(got, want) {
			t.Errorf("%s got %s %q, want %q", who, name, got, want)
		}
	}
	check("primary", a, "X-Origin", "a")
	check("primary", a, "X-Client", "replaced")
	check("primary", a, "X-Multi", "client", "added")
	check("primary", a, "X-Failover")
	check("primary", a, "TE")
	check("failover", b, "X-Origin")
	check("failover", b, "X-Client", "client")
	check("failover", b, "X-Multi", "client")
	check("failover", b, "X-Failover", "b")
	check("failover", b, "TE")
}

// PRT-1: HTTP2 is h2 or nothing; PRT-2: HTTPS never negotiates h2, HTTP is
// cleartext HTTP/1.1.
func TestProtocols(t *testing.T) {
	l := newLab(t)
	tests := []struct {
		protocol, listener string
		wantProto          string
		wantOffered        []string
	}{
		{config.ProtocolHTTP, "http", "HTTP/1.1", nil},
		{config.ProtocolHTTPS, "https", "HTTP/1.1", []string{"http/1.1"}},
		{config.ProtocolHTTP2, "h2", "HTTP/2.0", []string{"h2"}},
	}
	for _, tc := range tests {
		t.Run(tc.protocol, func(t *testing.T) {
			path := "/proto/" + tc.protocol
			f := l.fetch(l.engine(l.origin("a", tc.listener)), "a", get(path))
			f.wantStatus(t, 200)
			snap := l.emu.Journal().Query(journal.Query{Listener: tc.listener, PathPrefix: path})
			if snap.Requests[0].Proto != tc.wantProto || !slices.Equal(snap.Conns[0].OfferedALPN, tc.wantOffered) {
				t.Fatalf("origin saw %s, offered ALPN %q; want %s, %q", snap.Requests[0].Proto, snap.Conns[0].OfferedALPN, tc.wantProto, tc.wantOffered)
			}
			if f.Attempts[0].Protocol != tc.protocol {
				t.Errorf("attempt protocol %q", f.Attempts[0].Protocol)
			}
		})
	}
	t.Run("HTTP2 against an HTTP/1.1-only origin: 502", func(t *testing.T) {
		o := l.origin("a", "https", func(o *config.EffectiveOrigin) { o.Protocol = config.ProtocolHTTP2 })
		f := l.fetch(l.engine(o), "a", get("/proto/h2-on-https"))
		f.wantStatus(t, 502)
		if len(f.Attempts) != 1 || !strings.HasPrefix(f.Attempts[0].Outcome.String(), "connect_failure:tls_") {
			t.Fatalf("attempts: %s", f.outcomes())
		}
		if n := len(l.reqs(journal.Query{PathPrefix: "/proto/h2-on-https"})); n != 0 {
			t.Fatalf("origin got %d requests", n)
		}
	})
	t.Run("HTTP2 failure is a connect failure: failover", func(t *testing.T) {
		o := l.origin("a", "https", failover("b"), func(o *config.EffectiveOrigin) { o.Protocol = config.ProtocolHTTP2 })
		f := l.fetch(l.engine(o, l.origin("b", "h2")), "a", get("/proto/fo"))
		f.wantStatus(t, 200)
	})
}

// PRT-4: every invalid certificate is a connect failure, on both TLS
// protocols: the failover answers.
func TestTLSFaultsFailOver(t *testing.T) {
	l := newLab(t)
	for _, listener := range []string{"tls-expired", "tls-wrong-name", "tls-untrusted"} {
		for _, protocol := range []string{config.ProtocolHTTPS, config.ProtocolHTTP2} {
			t.Run(listener+"/"+protocol, func(t *testing.T) {
				path := "/tlsfault/" + listener + "/" + protocol
				e := l.engine(
					l.origin("a", listener, failover("b"), func(o *config.EffectiveOrigin) { o.Protocol = protocol }),
					l.origin("b", "http-b"))
				f := l.fetch(e, "a", get(path))
				f.wantStatus(t, 200)
				f.wantAttempts(t, "connect_failure:tls_certificate_error", "usable")
				wantObject(t, path, f.body)
			})
		}
	}
}

// PRT-5: origin trailers are not passed on.
func TestTrailersDropped(t *testing.T) {
	l := newLab(t)
	path := "/trailers"
	l.rule(rules.Rule{Match: rules.Match{Path: path}, Action: rules.Action{
		// X-Sum is sent as a header and, declared in Trailer, again after
		// the chunked body.
		Headers: map[string]string{"Trailer": "X-Sum", "X-Sum": "abc"},
		Omit:    []string{"Content-Length"},
	}})
	e := l.engine(l.origin("a", "http"))
	f := l.fetch(e, "a", get(path))
	f.wantStatus(t, 200)
	wantObject(t, path, f.body)
	if f.Response.Trailer != nil || f.Response.Header.Get("Trailer") != "" {
		t.Fatalf("trailers passed on: %v / %q", f.Response.Trailer, f.Response.Header.Get("Trailer"))
	}
}

// LOG-1, LOG-2: one record per attempt and one per fetch.
func TestLogs(t *testing.T) {
	l := newLab(t)
	path := "/log"
	l.rule(rules.Rule{Match: rules.Match{Path: path}, Action: rules.Action{Status: 503}})
	e := l.engine(l.origin("a", "h2", attempts(2), retryOn(config.RetryGatewayError)))
	r := get(path)
	r.RequestID = "log-1"
	f := l.fetch(e, "a", r)
	f.wantStatus(t, 200)
	atts := l.logs.records("origin attempt")
	if len(atts) != 2 {
		t.Fatalf("%d attempt records", len(atts))
	}
	for i, want := range []struct {
		status  float64
		outcome string
	}{{503, "retry:GATEWAY_ERROR"}, {200, "usable"}} {
		rec := atts[i]
		if rec["request_id"] != "log-1" || rec["attempt"] != float64(i+1) || rec["origin"] != "a" ||
			rec["origin_ip"] != "127.0.0.1" || rec["host"] != "media.example.com" || rec["protocol"] != "HTTP2" ||
			rec["status"] != want.status || rec["outcome"] != want.outcome || rec["latency_ms"] == nil {
			t.Errorf("attempt record %d: %v", i+1, rec)
		}
	}
	if n := len(l.logs.records("origin fetch")); n != 0 {
		t.Errorf("%d undocumented origin fetch records; the attempts and the client request record say it all", n)
	}
}
