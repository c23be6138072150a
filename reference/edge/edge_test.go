package edge

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

const testConfig = `
origins:
  - {name: h1, originAddress: origin.test, protocol: HTTP, port: {{port "http"}}}
  - name: tls
    originAddress: origin.test
    protocol: HTTP2
    port: {{port "h2"}}
    originOverrideAction:
      urlRewrite: {hostRewrite: origin.test}
      headerAction: {requestHeadersToAdd: [{headerName: X-Origin-Only, headerValue: "yes"}]}
  - {name: https, originAddress: origin.test, protocol: HTTPS, port: {{port "https"}}}
  - name: broken
    originAddress: primary.test
    protocol: HTTP2
    port: {{port "tls-untrusted"}}
    failoverOrigin: backup
    timeout: {maxAttemptsTimeout: 2s}
  - {name: backup, originAddress: backup.test, protocol: HTTP, port: {{port "http"}}}
  - name: slow
    originAddress: 127.0.0.1
    protocol: HTTP
    port: {{port "http"}}
    timeout: {readTimeout: 0.3s, responseTimeout: 2s}
  - name: retrying
    originAddress: 127.0.0.1
    protocol: HTTP
    port: {{port "http"}}
    maxAttempts: 3
    retryConditions: [CONNECT_FAILURE, HTTP_5XX]
  - name: hole
    originAddress: 127.0.0.1
    protocol: HTTP
    port: {{port "blackhole"}}
    maxAttempts: 2
    timeout: {connectTimeout: 0.3s, maxAttemptsTimeout: 0.5s}
service:
  name: test
  routing:
    hostRules:
      - {hosts: ["*"], pathMatcher: main}
      - {hosts: ["media.example.com"], pathMatcher: media}
    pathMatchers:
      - name: main
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /plain/}], origin: h1}
          - {priority: 2, matchRules: [{prefixMatch: /h2/}], origin: tls}
          - {priority: 3, matchRules: [{prefixMatch: /failover/}], origin: broken}
          - {priority: 4, matchRules: [{prefixMatch: /slow/}], origin: slow}
          - {priority: 5, matchRules: [{prefixMatch: /hole/}], origin: hole}
          - priority: 6
            matchRules: [{prefixMatch: /rewrite/}]
            origin: h1
            routeAction: {urlRewrite: {hostRewrite: service.example.com, pathPrefixRewrite: /rewritten/}}
            headerAction:
              requestHeadersToAdd: [{headerName: X-Route, headerValue: "1"}]
              responseHeadersToAdd: [{headerName: X-Edge, headerValue: ref}]
          - priority: 7
            matchRules: [{prefixMatch: /upload/}]
            origin: retrying
            routeMethods: {allowedMethods: [GET, HEAD, POST]}
          - {priority: 8, matchRules: [{prefixMatch: /old/}], urlRedirect: {pathRedirect: /new, redirectResponseCode: FOUND}}
      - name: media
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /}], origin: https}
`

// HST-1, HST-3, HST-6, PRT-1, PRT-2: each protocol reaches its listener with
// the right Host, SNI and ALPN, and the body arrives intact.
func TestProtocolsHostAndSNI(t *testing.T) {
	r := newRig(t, testConfig)
	for _, tc := range []struct {
		host, path, listener, wantHost, wantALPN, wantSNI string
	}{
		{"client.example", "/plain/a", "http", "client.example", "", ""},
		{"client.example", "/h2/a", "h2", "origin.test", "h2", "origin.test"},
		{"media.example.com", "/m/a", "https", "media.example.com", "http/1.1", "media.example.com"},
	} {
		t.Run(tc.listener, func(t *testing.T) {
			resp, body, err := r.do("GET", tc.host, tc.path)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET: %v %v", resp, err)
			}
			if err := synth.Verify(synth.Object{Path: tc.path, Size: 1024, Version: "1"}, 0, body); err != nil || len(body) != 1024 {
				t.Fatalf("body: %v", err)
			}
			reqs := r.waitEnded(tc.path, 1)
			if reqs[0].Listener != tc.listener || reqs[0].Host != tc.wantHost {
				t.Fatalf("origin saw listener %s Host %q, want %s %q", reqs[0].Listener, reqs[0].Host, tc.listener, tc.wantHost)
			}
			_, origOnly := header(reqs[0], "X-Origin-Only")
			if origOnly != (tc.listener == "h2") {
				t.Errorf("X-Origin-Only present=%v on %s; only the tls origin adds it (HST-6)", origOnly, tc.listener)
			}
			conns := r.emu.Journal().Query(journal.Query{PathPrefix: tc.path}).Conns
			if len(conns) != 1 || conns[0].ALPN != tc.wantALPN || conns[0].SNI != tc.wantSNI {
				t.Fatalf("connection %+v, want ALPN %q SNI %q", conns, tc.wantALPN, tc.wantSNI)
			}
		})
	}
}

// HST-1, MTH-7: route hostRewrite and pathPrefixRewrite apply after
// matching; route header actions apply both ways.
func TestRouteRewriteAndHeaderActions(t *testing.T) {
	r := newRig(t, testConfig)
	resp, _, err := r.do("GET", "client.example", "/rewrite/x?q=1")
	if err != nil || resp.StatusCode != 200 || resp.Header.Get("X-Edge") != "ref" {
		t.Fatalf("GET: %v %v", resp, err)
	}
	reqs := r.waitEnded("/rewritten/", 1)
	if reqs[0].URI != "/rewritten/x?q=1" || reqs[0].Host != "service.example.com" {
		t.Fatalf("origin saw %s Host %s", reqs[0].URI, reqs[0].Host)
	}
	if v, _ := header(reqs[0], "X-Route"); v != "1" {
		t.Fatalf("route request header missing: %v", reqs[0].Headers)
	}
}

// ATT-3, ATT-6, HST-2, PRT-4, TMO-8: the primary fails its TLS handshake
// (untrusted certificate), the failover answers; it sees the same Host.
func TestFailoverAfterTLSFailure(t *testing.T) {
	r := newRig(t, testConfig)
	if s := r.status("GET", "client.example", "/failover/ok"); s != 200 {
		t.Fatalf("status %d, want 200 from the failover", s)
	}
	reqs := r.waitEnded("/failover/ok", 1)
	if reqs[0].Listener != "http" || reqs[0].Host != "client.example" {
		t.Fatalf("failover saw %+v", reqs[0])
	}
	// The documentation's example: failover answers 404 -> client sees 404.
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: "/failover/missing"}, Action: rules.Action{Status: 404}}); err != nil {
		t.Fatal(err)
	}
	if s := r.status("GET", "client.example", "/failover/missing"); s != 404 {
		t.Fatalf("status %d, want the failover's 404", s)
	}
	// LOG-1: one client record, and its origin attempts linked to it. The
	// record is written once the response is complete, which can be just
	// after the client has it.
	rec := r.waitRecord("client request", func(m map[string]any) bool { return m["uri"] == "/failover/missing" })
	attempts := 0
	for _, a := range r.logs.records("origin attempt") {
		if a["request_id"] == rec["request_id"] {
			attempts++
		}
	}
	if attempts != 2 {
		t.Fatalf("request %v has %d attempt records, want 2", rec["request_id"], attempts)
	}
}

// ATT-2: an unsafe method whose first attempt fails (a 503 under
// HTTP_5XX) gets 502 after exactly one attempt; ATT-7: a GET is retried up
// to maxAttempts (3) and, every attempt failing, also gets 502.
func TestUnsafeMethodNotRetried(t *testing.T) {
	r := newRig(t, testConfig)
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{PathPrefix: "/upload/"}, Unlimited: true, Action: rules.Action{Status: 503}}); err != nil {
		t.Fatal(err)
	}
	if s := r.status("POST", "client.example", "/upload/post"); s != 502 {
		t.Fatalf("POST status %d, want 502", s)
	}
	if n := len(r.waitEnded("/upload/post", 1)); n != 1 {
		t.Fatalf("%d origin requests for the POST, want 1", n)
	}
	if s := r.status("GET", "client.example", "/upload/get"); s != 502 {
		t.Fatalf("GET status %d, want 502", s)
	}
	if n := len(r.waitEnded("/upload/get", 3)); n != 3 {
		t.Fatalf("%d origin requests for the GET, want 3", n)
	}
}

// ATT-9, TMO-2, TMO-7: a blackholed origin: the first attempt fails at its
// connectTimeout (0.3s), the second is cut at the maxAttemptsTimeout (0.5s)
// deadline, and the client gets 504.
func TestMaxAttemptsTimeoutGives504(t *testing.T) {
	r := newRig(t, testConfig)
	const deadline = 500 * time.Millisecond
	start := time.Now()
	s := r.status("GET", "client.example", "/hole/x")
	el := time.Since(start)
	if s != 504 {
		t.Fatalf("status %d, want 504", s)
	}
	if el < deadline || el > deadline+time.Second {
		t.Fatalf("504 after %v, want about %v", el, deadline)
	}
}

// TMO-5, TMO-6: an origin body slower than readTimeout is truncated so the
// client can tell, and the truncation is logged.
func TestReadTimeoutTruncatesVisibly(t *testing.T) {
	r := newRig(t, testConfig)
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: "/slow/drip"}, Action: rules.Action{Drip: &rules.Drip{Bytes: 100, Every: rules.Duration(900 * time.Millisecond)}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := r.edge.Client().Get(r.edge.URL + "/slow/drip")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(body) >= 1024 {
		t.Fatalf("client read %d bytes with err %v; want a visibly truncated body", len(body), err)
	}
	r.waitRecord("client request", func(m map[string]any) bool {
		return m["uri"] == "/slow/drip" && m["truncated"] == "read_timeout"
	})
}

// An origin that truncates its body: the client's body is truncated too,
// never passed off as complete.
func TestOriginTruncationPropagates(t *testing.T) {
	r := newRig(t, testConfig)
	n := int64(500)
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: "/plain/cut"}, Action: rules.Action{Truncate: &rules.Cut{AfterBytes: &n}}}); err != nil {
		t.Fatal(err)
	}
	resp, err := r.edge.Client().Get(r.edge.URL + "/plain/cut")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || len(body) > 500 {
		t.Fatalf("read %d bytes, err %v; want an error after at most 500", len(body), err)
	}
}

// PRT-5: no TE and no hop-by-hop headers reach the origin.
func TestHopByHopAndTE(t *testing.T) {
	r := newRig(t, testConfig)
	if s := r.status("GET", "client.example", "/plain/hop", "TE", "trailers", "Connection", "X-Hop", "X-Hop", "1", "X-Kept", "2"); s != 200 {
		t.Fatalf("status %d", s)
	}
	req := r.waitEnded("/plain/hop", 1)[0]
	for _, name := range []string{"TE", "X-Hop", "Connection"} {
		if _, ok := header(req, name); ok && !(name == "Connection") {
			t.Errorf("%s reached the origin: %v", name, req.Headers)
		}
	}
	if v, ok := header(req, "Connection"); ok && strings.Contains(strings.ToLower(v), "x-hop") {
		t.Errorf("client's Connection header forwarded: %q", v)
	}
	if v, _ := header(req, "X-Kept"); v != "2" {
		t.Errorf("end-to-end header lost: %v", req.Headers)
	}
}

// MTH-1, MTH-2, MTH-3, MTH-4 and urlRedirect through the whole edge.
func TestMethodsAndEdgeAnswers(t *testing.T) {
	r := newRig(t, testConfig)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"DELETE", "/plain/x", 405},
		{"POST", "/plain/x", 405},
		{"POST", "/upload/x", 200},
		{"PUT", "/upload/x", 405},
		{"OPTIONS", "/plain/x", 200},
		{"GET", "/nowhere", 404},
		{"GET", "/old/x", 302},
	} {
		if s := r.status(tc.method, "client.example", tc.path); s != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, s, tc.want)
		}
	}
	resp, _, _ := r.do("GET", "client.example", "/old/x")
	if loc := resp.Header.Get("Location"); !strings.HasSuffix(loc, "/new") {
		t.Errorf("redirect Location %q", loc)
	}
	// A GET with a body is refused before any origin sees it.
	req, _ := http.NewRequest("GET", r.edge.URL+"/plain/body", strings.NewReader("x"))
	resp, err := r.edge.Client().Do(req)
	if err != nil || resp.StatusCode != 400 {
		t.Fatalf("GET with body: %v %v", resp, err)
	}
	if n := len(r.journal("/plain/body")); n != 0 {
		t.Fatalf("origin saw %d requests for a refused GET", n)
	}
}

// A HEAD goes to the origin as HEAD and the client gets the object's
// headers, Content-Length included, and no body.
func TestHeadPassesHeaders(t *testing.T) {
	r := newRig(t, testConfig)
	resp, body, err := r.do("HEAD", "client.example", "/plain/head")
	if err != nil || resp.StatusCode != 200 || resp.ContentLength != 1024 || len(body) != 0 || resp.Header.Get("Etag") == "" {
		t.Fatalf("HEAD: %v (Content-Length %d, %d body bytes) %v", resp, resp.ContentLength, len(body), err)
	}
	if m := r.waitEnded("/plain/head", 1)[0].Method; m != "HEAD" {
		t.Fatalf("origin saw %s", m)
	}
}
