package fetch

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

func redirectRule(listener, path string, status int, location string) rules.Rule {
	return rules.Rule{Match: rules.Match{Listener: listener, Path: path}, Unlimited: true,
		Action: rules.Action{Redirect: &rules.Redirect{Status: status, Location: location}}}
}

// RDR-1: only listed codes are followed; RDR-4: to the Location host, with
// the origin's protocol, Host and SNI the Location's host.
func TestRedirectFollowing(t *testing.T) {
	l := newLab(t)
	other := func(listener, path string) string {
		return "https://other.test:" + strconv.Itoa(l.port(listener)) + path
	}
	codes := []int{301, 302, 303, 307, 308}
	for _, code := range codes {
		t.Run(fmt.Sprintf("%d listed is followed", code), func(t *testing.T) {
			path := fmt.Sprintf("/rdr/%d", code)
			target := path + "/moved?x=1"
			l.rule(redirectRule("https", path, code, other("https-b", target)))
			e := l.engine(l.origin("a", "https", attempts(2), redirects(code)))
			f := l.fetch(e, "a", get(path))
			f.wantStatus(t, 200)
			f.wantAttempts(t, "redirect", "usable")
			wantObject(t, path+"/moved", f.body)
			snap := l.emu.Journal().Query(journal.Query{Listener: "https-b", PathPrefix: path})
			if len(snap.Requests) != 1 || len(snap.Conns) != 1 {
				t.Fatalf("redirect target got %d requests on %d conns", len(snap.Requests), len(snap.Conns))
			}
			r, c := snap.Requests[0], snap.Conns[0]
			wantHost := "other.test:" + strconv.Itoa(l.port("https-b"))
			if r.Host != wantHost || c.SNI != "other.test" || r.URI != target || r.Method != "GET" {
				t.Errorf("target saw %s %s host %q SNI %q; want GET %s host %q SNI other.test", r.Method, r.URI, r.Host, c.SNI, target, wantHost)
			}
			if !slices.Equal(c.OfferedALPN, []string{"http/1.1"}) {
				t.Errorf("offered ALPN %q: not the HTTPS origin's protocol", c.OfferedALPN)
			}
			if a := f.Attempts[1]; a.Host != wantHost || a.Address != "other.test" || a.IP != "127.0.0.1" || a.Origin != "a" {
				t.Errorf("attempt 2: %+v", a)
			}
		})
		t.Run(fmt.Sprintf("%d not listed is returned", code), func(t *testing.T) {
			path := fmt.Sprintf("/rdr/unlisted/%d", code)
			loc := other("https-b", path+"/moved")
			l.rule(redirectRule("https", path, code, loc))
			var listed []int
			for _, c := range codes {
				if c != code {
					listed = append(listed, c)
				}
			}
			e := l.engine(l.origin("a", "https", attempts(2), redirects(listed...)))
			f := l.fetch(e, "a", get(path))
			f.wantStatus(t, code)
			f.wantAttempts(t, "usable")
			if f.Response.Header.Get("Location") != loc {
				t.Errorf("Location %q", f.Response.Header.Get("Location"))
			}
			if n := len(l.reqs(journal.Query{Listener: "https-b", PathPrefix: path})); n != 0 {
				t.Errorf("followed anyway")
			}
		})
	}
	t.Run("HEAD stays HEAD, also on 303", func(t *testing.T) {
		path := "/rdr/head"
		l.rule(redirectRule("http", path, 303, "http://other.test:"+strconv.Itoa(l.port("http-b"))+path+"/moved"))
		e := l.engine(l.origin("a", "http", attempts(2), redirects(303)))
		r := get(path)
		r.Method = "HEAD"
		f := l.fetch(e, "a", r)
		f.wantStatus(t, 200)
		reqs := l.waitEnded(journal.Query{Listener: "http-b", PathPrefix: path}, 1)
		if reqs[0].Method != "HEAD" {
			t.Fatalf("redirected request was %s", reqs[0].Method)
		}
	})
	t.Run("relative Location stays on the target", func(t *testing.T) {
		path := "/rdr/rel/a"
		l.rule(redirectRule("h2", path, 302, "b?q=2"))
		e := l.engine(l.origin("a", "h2", attempts(2), redirects(302)))
		f := l.fetch(e, "a", get(path))
		f.wantStatus(t, 200)
		reqs := l.waitEnded(journal.Query{Listener: "h2", PathPrefix: "/rdr/rel/"}, 2)
		if reqs[1].URI != "/rdr/rel/b?q=2" || reqs[1].Host != "media.example.com" {
			t.Fatalf("relative redirect went to %s host %s", reqs[1].URI, reqs[1].Host)
		}
	})
	t.Run("protocol of the origin, whatever the scheme", func(t *testing.T) {
		path := "/rdr/scheme"
		l.rule(redirectRule("h2", path, 307, "http://other.test:"+strconv.Itoa(l.port("h2-b"))+path+"/moved"))
		e := l.engine(l.origin("a", "h2", attempts(2), redirects(307)))
		f := l.fetch(e, "a", get(path))
		f.wantStatus(t, 200)
		snap := l.emu.Journal().Query(journal.Query{Listener: "h2-b", PathPrefix: path})
		if len(snap.Conns) != 1 || snap.Conns[0].ALPN != "h2" || snap.Requests[0].Proto != "HTTP/2.0" {
			t.Fatalf("target: %+v", snap)
		}
	})
	t.Run("retry after a redirect goes to the redirected target", func(t *testing.T) {
		path := "/rdr/retry"
		l.rule(redirectRule("http", path, 302, "http://other.test:"+strconv.Itoa(l.port("http-b"))+path+"/moved"),
			rules.Rule{Match: rules.Match{Listener: "http-b", Path: path + "/moved"}, Action: rules.Action{Status: 503}})
		e := l.engine(l.origin("a", "http", attempts(3), redirects(302), retryOn(config.RetryGatewayError)))
		f := l.fetch(e, "a", get(path))
		f.wantStatus(t, 200)
		f.wantAttempts(t, "redirect", "retry:GATEWAY_ERROR", "usable")
		if n := len(l.reqs(journal.Query{Listener: "http-b", PathPrefix: path})); n != 2 {
			t.Fatalf("target got %d requests", n)
		}
	})
}

// RDR-2, RDR-5, TMO-4: a followed redirect is an attempt of the origin that
// returned it, under its timeouts, the overall cap and the deadline.
func TestRedirectLimits(t *testing.T) {
	l := newLab(t)
	t.Run("maxAttempts 1 cannot follow: 502", func(t *testing.T) {
		path := "/lim/one"
		l.rule(redirectRule("http", path, 302, "/elsewhere"))
		e := l.engine(l.origin("a", "http", redirects(302)))
		f := l.fetch(e, "a", get(path))
		f.wantStatus(t, 502)
		f.wantAttempts(t, "redirect")
		if n := len(l.reqs(journal.Query{PathPrefix: "/elsewhere"})); n != 0 {
			t.Fatal("followed")
		}
	})
	t.Run("chain beyond 4 attempts: 502", func(t *testing.T) {
		for i := 1; i <= 5; i++ {
			l.rule(redirectRule("http", fmt.Sprintf("/lim/chain/%d", i), 302, fmt.Sprintf("/lim/chain/%d", i+1)))
		}
		e := l.engine(l.origin("a", "http", attempts(4), redirects(302)))
		f := l.fetch(e, "a", get("/lim/chain/1"))
		f.wantStatus(t, 502)
		f.wantAttempts(t, "redirect", "redirect", "redirect", "redirect")
		if n := len(l.reqs(journal.Query{PathPrefix: "/lim/chain/"})); n != 4 {
			t.Fatalf("origin got %d requests, want 4", n)
		}
	})
	t.Run("redirect counted with the failover chain", func(t *testing.T) {
		path := "/lim/mixed"
		l.rule(rules.Rule{Match: rules.Match{Listener: "http", Path: path}, Unlimited: true, Action: rules.Action{Status: 503}},
			redirectRule("http-b", path, 302, path+"/next"),
			rules.Rule{Match: rules.Match{Listener: "http-b", Path: path + "/next"}, Unlimited: true, Action: rules.Action{Status: 503}})
		e := l.engine(
			l.origin("a", "http", attempts(2), retryOn(config.RetryGatewayError), failover("b")),
			l.origin("b", "http-b", attempts(4), redirects(302), retryOn(config.RetryGatewayError)))
		f := l.fetch(e, "a", get(path))
		f.wantStatus(t, 502)
		f.wantAttempts(t, "retry:GATEWAY_ERROR", "retry:GATEWAY_ERROR", "redirect", "retry:GATEWAY_ERROR")
	})
	t.Run("redirected attempt uses the returning origin's connectTimeout", func(t *testing.T) {
		const ct = 300 * time.Millisecond
		path := "/lim/ct"
		l.rule(redirectRule("http", path, 302, "http://other.test:"+strconv.Itoa(l.port("blackhole"))+"/x"))
		e := l.engine(l.origin("a", "http", attempts(2), redirects(302), timeouts(ct, 5*time.Second, 0, 0)))
		f := l.fetch(e, "a", get(path))
		f.wantStatus(t, 502)
		f.wantAttempts(t, "redirect", "connect_failure:http_response_timeout")
		within(t, "redirected attempt", f.Attempts[1].Duration, ct, ct+slack)
	})
	t.Run("deadline across a redirect: 504", func(t *testing.T) {
		const deadline = 500 * time.Millisecond
		path := "/lim/deadline"
		l.rule(redirectRule("http", path, 302, path+"/slow"),
			rules.Rule{Match: rules.Match{Path: path + "/slow"}, Action: rules.Action{Delay: rules.Duration(3 * deadline)}})
		e := l.engine(l.origin("a", "http", attempts(2), redirects(302), timeouts(2*time.Second, deadline, 0, 0)))
		f := l.fetch(e, "a", get(path))
		f.wantStatus(t, 504)
		f.wantAttempts(t, "redirect", "timeout")
		within(t, "fetch", f.elapsed, deadline, deadline+slack)
	})
}

// RDR-6 (EXT): a redirect to a host outside the allow-list is returned.
func TestRedirectAllowList(t *testing.T) {
	l := newLab(t)
	port := strconv.Itoa(l.port("http-b"))
	allow := func(o *config.EffectiveOrigin) { o.RedirectAllowList = []string{"allowed.test"} }
	tests := []struct {
		host   string
		follow bool
	}{
		{"allowed.test", true},
		{"ALLOWED.test", true},
		{"other.test", false},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			path := "/allow/" + tc.host
			loc := "http://" + tc.host + ":" + port + path + "/moved"
			l.rule(redirectRule("http", path, 302, loc))
			e := l.engine(l.origin("a", "http", attempts(2), redirects(302), allow))
			f := l.fetch(e, "a", get(path))
			if tc.follow {
				f.wantStatus(t, 200)
				f.wantAttempts(t, "redirect", "usable")
				return
			}
			f.wantStatus(t, 302)
			f.wantAttempts(t, "usable")
			if f.Response.Header.Get("Location") != loc {
				t.Errorf("Location %q", f.Response.Header.Get("Location"))
			}
		})
	}
}

// The target a Location resolves to (RDR-4), without sockets.
func TestRedirectTarget(t *testing.T) {
	f := &fetch{e: New(nil, nil, nil)}
	cur := step{target: upstream.Target{Protocol: config.ProtocolHTTPS, Address: "10.0.0.1", Port: 8443, Host: "media.example.com"}, path: "/a/b?x=1"}
	tests := []struct {
		protocol, location string
		want               upstream.Target
		wantPath           string
		ok                 bool
	}{
		{config.ProtocolHTTPS, "https://cdn.example.org/v/1", upstream.Target{Protocol: "HTTPS", Address: "cdn.example.org", Port: 443, Host: "cdn.example.org"}, "/v/1", true},
		{config.ProtocolHTTP, "https://cdn.example.org/v/1", upstream.Target{Protocol: "HTTP", Address: "cdn.example.org", Port: 80, Host: "cdn.example.org"}, "/v/1", true},
		{config.ProtocolHTTP2, "http://cdn.example.org:8080/v?q", upstream.Target{Protocol: "HTTP2", Address: "cdn.example.org", Port: 8080, Host: "cdn.example.org:8080"}, "/v?q", true},
		{config.ProtocolHTTP2, "https://[2001:db8::1]:9443/v", upstream.Target{Protocol: "HTTP2", Address: "2001:db8::1", Port: 9443, Host: "[2001:db8::1]:9443"}, "/v", true},
		{config.ProtocolHTTPS, "//cdn.example.org/v", upstream.Target{Protocol: "HTTPS", Address: "cdn.example.org", Port: 443, Host: "cdn.example.org"}, "/v", true},
		{config.ProtocolHTTPS, "c?y=2", cur.target, "/a/c?y=2", true},
		{config.ProtocolHTTPS, "/z", cur.target, "/z", true},
		{config.ProtocolHTTPS, "", upstream.Target{}, "", false},
		{config.ProtocolHTTPS, "ftp://x/y", upstream.Target{}, "", false},
		{config.ProtocolHTTPS, "https://x:99999/", upstream.Target{}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.protocol+" "+tc.location, func(t *testing.T) {
			o := config.EffectiveOrigin{Name: "a", Protocol: tc.protocol}
			r, ok := f.redirectTarget(o, cur, tc.location)
			if ok != tc.ok {
				t.Fatalf("ok = %v", ok)
			}
			if ok && (r.target != tc.want || r.path != tc.wantPath) {
				t.Fatalf("got %+v %q, want %+v %q", r.target, r.path, tc.want, tc.wantPath)
			}
		})
	}

}
