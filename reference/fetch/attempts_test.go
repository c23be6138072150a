package fetch

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/reference/config"
)

// ATT-5, ATT-6, ATT-10: which statuses each retry condition retries; a
// status outside the origin's conditions is returned as is, with its body.
func TestRetryConditions(t *testing.T) {
	l := newLab(t)
	tests := []struct {
		cond    string
		status  int
		retried bool
	}{
		{config.RetryHTTP5xx, 500, true},
		{config.RetryHTTP5xx, 501, true},
		{config.RetryHTTP5xx, 503, true},
		{config.RetryHTTP5xx, 404, false},
		{config.RetryGatewayError, 502, true},
		{config.RetryGatewayError, 503, true},
		{config.RetryGatewayError, 504, true},
		{config.RetryGatewayError, 500, false},
		{config.RetryGatewayError, 501, false},
		{config.RetryRetriable4xx, 409, true},
		{config.RetryRetriable4xx, 429, true},
		{config.RetryRetriable4xx, 400, false},
		{config.RetryRetriable4xx, 404, false},
		{config.RetryNotFound, 404, true},
		{config.RetryNotFound, 410, false},
		{config.RetryNotFound, 403, false},
		{config.RetryForbidden, 403, true},
		{config.RetryForbidden, 401, false},
		{config.RetryConnectFailure, 503, false}, // ATT-10: a 5xx outside the conditions is usable
		{config.RetryConnectFailure, 404, false},
	}
	for _, tc := range tests {
		name := fmt.Sprintf("%s/%d", tc.cond, tc.status)
		t.Run(name, func(t *testing.T) {
			path := "/cond/" + name
			l.rule(rules.Rule{Match: rules.Match{Path: path}, Action: rules.Action{Status: tc.status, Body: ptr("origin says " + strconv.Itoa(tc.status))}})
			e := l.engine(l.origin("p", "http", attempts(2), retryOn(tc.cond)))
			f := l.fetch(e, "p", get(path))
			n := len(l.reqs(journal.Query{PathPrefix: path}))
			if tc.retried {
				f.wantStatus(t, 200)
				f.wantAttempts(t, "retry:"+tc.cond, "usable")
				wantObject(t, path, f.body)
				if n != 2 {
					t.Fatalf("origin got %d requests, want 2", n)
				}
				return
			}
			f.wantStatus(t, tc.status)
			f.wantAttempts(t, "usable")
			if string(f.body) != "origin says "+strconv.Itoa(tc.status) {
				t.Fatalf("body %q, want the origin's", f.body)
			}
			if n != 1 {
				t.Fatalf("origin got %d requests, want 1", n)
			}
		})
	}
}

// The failover table of the documentation (ATT-3, ATT-6, ATT-8).
func TestDocumentedFailoverScenarios(t *testing.T) {
	l := newLab(t)
	t.Run("no response after two attempts, no failover: 502", func(t *testing.T) {
		e := l.engine(l.origin("p", "refuse", attempts(2)))
		f := l.fetch(e, "p", get("/doc/1"))
		f.wantStatus(t, 502)
		f.wantAttempts(t, "connect_failure:connection_refused", "connect_failure:connection_refused")
		if f.Reason != "connection_refused" {
			t.Errorf("reason %q", f.Reason)
		}
	})
	t.Run("primary fails TLS handshake, failover answers 404: 404", func(t *testing.T) {
		l.rule(rules.Rule{Match: rules.Match{Listener: "http-b", Path: "/doc/2"}, Action: rules.Action{Status: 404, Body: ptr("not here")}})
		e := l.engine(
			l.origin("p", "tls-untrusted", failover("b"), func(o *config.EffectiveOrigin) { o.Protocol = config.ProtocolHTTP2 }),
			l.origin("b", "http-b"))
		f := l.fetch(e, "p", get("/doc/2"))
		f.wantStatus(t, 404)
		f.wantAttempts(t, "connect_failure:tls_certificate_error", "usable")
		if string(f.body) != "not here" || f.Origin != "b" {
			t.Fatalf("body %q from %q, want the failover's 404 body", f.body, f.Origin)
		}
	})
	t.Run("no status from primary or failover: 502", func(t *testing.T) {
		e := l.engine(l.origin("p", "refuse", failover("b")), l.origin("b", "tls-expired"))
		f := l.fetch(e, "p", get("/doc/3"))
		f.wantStatus(t, 502)
		f.wantAttempts(t, "connect_failure:connection_refused", "connect_failure:tls_certificate_error")
		if f.Origin != "b" {
			t.Errorf("origin %q, want the last one tried", f.Origin)
		}
		// LOG-2: each failed attempt names the IP it dialled (the refused
		// connect, the handshake that failed).
		for i, a := range f.Attempts {
			if a.IP != "127.0.0.1" {
				t.Errorf("attempt %d (%s): origin IP %q, want 127.0.0.1", i+1, a.Outcome, a.IP)
			}
		}
	})
}

// ATT-1, ATT-2, RDR-3: unsafe methods get one attempt; a failure is 502 at
// once; anything else passes through. Safe methods are retried.
func TestUnsafeMethods(t *testing.T) {
	l := newLab(t)
	tests := []struct {
		name, method, listener string
		action                 *rules.Action
		wantStatus             int
		wantOutcome            string
	}{
		{"POST 503", "POST", "http", &rules.Action{Status: 503}, 502, "retry:GATEWAY_ERROR"},
		{"PUT refused", "PUT", "refuse", nil, 502, "connect_failure:connection_refused"},
		{"DELETE 429", "DELETE", "http", &rules.Action{Status: 429}, 502, "retry:RETRIABLE_4XX"},
		{"PATCH 404 not a condition", "PATCH", "http", &rules.Action{Status: 404}, 404, "usable"},
		{"POST 200", "POST", "http", &rules.Action{Status: 200, Body: ptr("created")}, 200, "usable"},
		{"POST 302 listed", "POST", "http", &rules.Action{Redirect: &rules.Redirect{Status: 302, Location: "/elsewhere"}}, 302, "usable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "/unsafe/" + strings.ReplaceAll(tc.name, " ", "-")
			if tc.action != nil {
				l.rule(rules.Rule{Match: rules.Match{Path: path}, Unlimited: true, Action: *tc.action})
			}
			e := l.engine(
				l.origin("p", tc.listener, attempts(3), failover("b"), redirects(302),
					retryOn(config.RetryConnectFailure, config.RetryGatewayError, config.RetryRetriable4xx)),
				l.origin("b", "http-b", attempts(3)))
			r := get(path)
			r.Method = tc.method
			r.Body, r.ContentLength = strings.NewReader("payload"), 7
			f := l.fetch(e, "p", r)
			f.wantStatus(t, tc.wantStatus)
			f.wantAttempts(t, tc.wantOutcome)
			if tc.listener == "http" {
				reqs := l.waitEnded(journal.Query{PathPrefix: path}, 1)
				if len(reqs) != 1 || reqs[0].Method != tc.method || reqs[0].Listener != "http" {
					t.Fatalf("origin requests %+v, want exactly one %s to the primary", reqs, tc.method)
				}
				if cl := header(reqs[0], "Content-Length"); len(cl) != 1 || cl[0] != "7" {
					t.Errorf("Content-Length %q, want 7", cl)
				}
			}
			if n := len(l.reqs(journal.Query{Listener: "http-b"})); n != 0 {
				t.Fatalf("failover got %d requests", n)
			}
		})
	}
	for _, method := range []string{"GET", "HEAD", "OPTIONS"} {
		t.Run(method+" is retried", func(t *testing.T) {
			path := "/safe/" + method
			l.rule(rules.Rule{Match: rules.Match{Path: path}, Action: rules.Action{Status: 503}})
			e := l.engine(l.origin("p", "http", attempts(2), retryOn(config.RetryGatewayError)))
			r := get(path)
			r.Method = method
			if method == "OPTIONS" { // a safe body is kept and sent again
				r.Body, r.ContentLength = strings.NewReader("opts"), 4
			}
			f := l.fetch(e, "p", r)
			f.wantStatus(t, 200)
			f.wantAttempts(t, "retry:GATEWAY_ERROR", "usable")
			reqs := l.waitEnded(journal.Query{PathPrefix: path}, 2)
			for _, rq := range reqs {
				if rq.Method != method {
					t.Errorf("origin saw %s, want %s", rq.Method, method)
				}
				if method == "OPTIONS" && strings.Join(header(rq, "Content-Length"), ",") != "4" {
					t.Errorf("attempt without the body: %v", rq.Headers)
				}
			}
		})
	}
}

// ATT-3: the primary under its maxAttempts, then each failover under its
// own maxAttempts, retry conditions and failover.
func TestFailoverChain(t *testing.T) {
	l := newLab(t)
	t.Run("each origin its own conditions", func(t *testing.T) {
		path := "/chain/1"
		l.rule(
			rules.Rule{Match: rules.Match{Listener: "http", Path: path}, Unlimited: true, Action: rules.Action{Status: 503}},
			rules.Rule{Match: rules.Match{Listener: "http-b", Path: path}, Unlimited: true, Action: rules.Action{Status: 404}},
		)
		e := l.engine(
			l.origin("a", "http", attempts(2), retryOn(config.RetryGatewayError), failover("b")),
			l.origin("b", "http-b", retryOn(config.RetryNotFound), failover("c")), // a's conditions do not list 404
			l.origin("c", "https"))
		f := l.fetch(e, "a", get(path))
		f.wantStatus(t, 200)
		f.wantAttempts(t, "retry:GATEWAY_ERROR", "retry:GATEWAY_ERROR", "retry:NOT_FOUND", "usable")
		if f.Origin != "c" || f.Attempts[3].Origin != "c" || f.Attempts[2].Origin != "b" {
			t.Fatalf("origins: %s", f.outcomes())
		}
		wantObject(t, path, f.body)
	})
	t.Run("failover's conditions decide on its statuses", func(t *testing.T) {
		path := "/chain/2"
		l.rule(rules.Rule{Match: rules.Match{Path: path}, Unlimited: true, Action: rules.Action{Status: 503, Body: ptr("busy")}})
		e := l.engine(
			l.origin("a", "http", retryOn(config.RetryGatewayError), failover("b")),
			l.origin("b", "http-b", failover("c")), // only CONNECT_FAILURE: its 503 is usable
			l.origin("c", "https"))
		f := l.fetch(e, "a", get(path))
		f.wantStatus(t, 503)
		f.wantAttempts(t, "retry:GATEWAY_ERROR", "usable")
		if string(f.body) != "busy" {
			t.Fatalf("body %q", f.body)
		}
	})
	t.Run("connect failure not listed ends the chain", func(t *testing.T) {
		e := l.engine(l.origin("a", "refuse", attempts(3), retryOn(config.RetryHTTP5xx), failover("b")), l.origin("b", "http-b"))
		f := l.fetch(e, "a", get("/chain/3"))
		f.wantStatus(t, 502)
		f.wantAttempts(t, "connect_failure:connection_refused")
	})
	t.Run("retry on 404 then success", func(t *testing.T) {
		path := "/chain/404"
		l.rule(rules.Rule{Match: rules.Match{Path: path}, Action: rules.Action{Status: 404}})
		e := l.engine(l.origin("a", "h2", attempts(2), retryOn(config.RetryNotFound)))
		f := l.fetch(e, "a", get(path))
		f.wantStatus(t, 200)
		f.wantAttempts(t, "retry:NOT_FOUND", "usable")
		wantObject(t, path, f.body)
	})
}

// ATT-4, ATT-7: at most 4 attempts in all; all statuses failing gives 502.
func TestAttemptCap(t *testing.T) {
	l := newLab(t)
	tests := []struct {
		name             string
		primary, backup  int
		wantA, wantB     int
		wantBOutcomeLast bool
	}{
		{"maxAttempts 4 and a failover", 4, 4, 4, 0, false},
		{"3 then failover's 3", 3, 3, 3, 1, true},
		{"2 then failover's 2", 2, 2, 2, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := "/cap/" + strings.ReplaceAll(tc.name, " ", "-")
			l.rule(rules.Rule{Match: rules.Match{Path: path}, Unlimited: true, Action: rules.Action{Status: 503}})
			e := l.engine(
				l.origin("a", "http", attempts(tc.primary), retryOn(config.RetryGatewayError), failover("b")),
				l.origin("b", "http-b", attempts(tc.backup), retryOn(config.RetryGatewayError)))
			f := l.fetch(e, "a", get(path))
			f.wantStatus(t, 502) // ATT-7: not the origin's 503
			if len(f.Attempts) != tc.wantA+tc.wantB {
				t.Fatalf("%d attempts (%s), want %d", len(f.Attempts), f.outcomes(), tc.wantA+tc.wantB)
			}
			if a, b := len(l.reqs(journal.Query{Listener: "http", PathPrefix: path})), len(l.reqs(journal.Query{Listener: "http-b", PathPrefix: path})); a != tc.wantA || b != tc.wantB {
				t.Fatalf("origins got %d and %d requests, want %d and %d", a, b, tc.wantA, tc.wantB)
			}
			if f.Reason != "destination_unavailable" {
				t.Errorf("reason %q", f.Reason)
			}
		})
	}
}

// ATT-11: retries are immediate.
func TestRetriesAreImmediate(t *testing.T) {
	l := newLab(t)
	path := "/immediate"
	l.rule(rules.Rule{Match: rules.Match{Path: path}, Times: 2, Action: rules.Action{Status: 503}})
	e := l.engine(l.origin("a", "http", attempts(3), retryOn(config.RetryGatewayError)))
	f := l.fetch(e, "a", get(path))
	f.wantStatus(t, 200)
	reqs := l.waitEnded(journal.Query{PathPrefix: path}, 3)
	for i := 1; i < len(reqs); i++ {
		if gap := reqs[i].Arrived.Sub(reqs[i-1].Ended); gap > 100*time.Millisecond {
			t.Errorf("gap between attempts %d and %d: %v", i, i+1, gap)
		}
	}
}

func TestClientGoneAndBadConfig(t *testing.T) {
	l := newLab(t)
	t.Run("client gone", func(t *testing.T) {
		e := l.engine(l.origin("a", "blackhole", attempts(3), failover("b")), l.origin("b", "http-b"))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		res := e.Fetch(ctx, "a", get("/gone"))
		within(t, "fetch", time.Since(start), 200*time.Millisecond, time.Second)
		if res.Status != 502 || res.Reason != "client_gone" || len(res.Attempts) != 1 {
			t.Fatalf("got %d %s after %d attempts", res.Status, res.Reason, len(res.Attempts))
		}
	})
	t.Run("unknown primary", func(t *testing.T) {
		res := l.engine().Fetch(context.Background(), "nope", get("/x"))
		if res.Status != http.StatusBadGateway || res.Reason != "proxy_configuration_error" {
			t.Fatalf("got %d %s", res.Status, res.Reason)
		}
	})
	t.Run("unknown failover", func(t *testing.T) {
		e := l.engine(l.origin("a", "refuse", failover("missing")))
		f := l.fetch(e, "a", get("/x"))
		f.wantStatus(t, 502)
		f.wantAttempts(t, "connect_failure:connection_refused")
	})
}
