package varnish

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/peers/peertest"
	"github.com/edgeconform/edgeconform/suites/topology"
)

func generate(t *testing.T) (*topology.Neutral, string, *peers.Setup) {
	t.Helper()
	topo, env, setup := peertest.Generate(t, Peer{}, topology.Strict)
	b, err := os.ReadFile(env.Path(VCLFile))
	if err != nil {
		t.Fatal(err)
	}
	return topo, string(b), setup
}

// inOrder checks that each of seq occurs in vcl after the previous one,
// all within the sub (or backend) where the first one is.
func inOrder(vcl string, seq ...string) bool {
	i := strings.Index(vcl, seq[0])
	if i < 0 {
		return false
	}
	block := vcl[i:]
	if j := strings.Index(block, "\n}\n"); j >= 0 {
		block = block[:j]
	}
	for _, s := range seq[1:] {
		j := strings.Index(block, s)
		if j < 0 {
			return false
		}
		block = block[j+len(s):]
	}
	return true
}

func TestVCLMapsTheTopology(t *testing.T) {
	topo, vcl, setup := generate(t)
	a, _ := topo.Listener(topology.ListenerA)
	for _, tc := range []struct {
		name string
		seq  []string
	}{
		// ATT-3: att3's primary (2 attempts, NOT_FOUND), then b (HTTP_5XX), then c.
		{"backend", []string{"backend o_att3_0 {", `.port = "` + strconv.Itoa(a.Port) + `"`}},
		{"backend timeouts", []string{"backend o_tmo3_0 {", ".between_bytes_timeout = 4s;"}},
		{"failover at the primary's maxAttempts", []string{"sub vcl_backend_fetch", "# chain att3-0", "if (bereq.retries == 2) {\n      set bereq.backend = o_att3_1;"}},
		{"retry on 404 at the primary only", []string{"sub vcl_backend_response", "# chain att3-0", "if (bereq.backend == o_att3_0) {", "beresp.status == 404", "if (bereq.backend == o_att3_1) {", "beresp.status >= 500 && beresp.status <= 599"}},
		// TMO-2: the route's first origin's maxAttemptsTimeout (tmo2: 5 units).
		{"deadline", []string{"sub vcl_backend_fetch", "# chain tmo2-0", "now - bereq.time >= 5s"}},
		// MTH-1: methods-post allows GET, HEAD, POST.
		{"methods", []string{"# scenario methods-post", `set req.http.X-Edgeconform-Varnish-Allow = "GET, HEAD, POST";`}},
		// MTH-4: prio-first (900) is tried before prio (901).
		{"priority", []string{"sub ec_matcher_main", `X-Edgeconform-Prio == "first"`, "# scenario prio-first\n", "# scenario prio\n"}},
		// CCH-2: cch-static-ttl's defaultTtl.
		{"default ttl", []string{"# cch-static-ttl, CACHE_ALL_STATIC", "set beresp.ttl = 2s; # CCH-2"}},
		// RDR-1: rdr follows 301 and 302 (to the Location's listener).
		{"redirect", []string{"sub vcl_backend_response", "# chain rdr-0", "beresp.status == 301 || beresp.status == 302", "set bereq.backend = o_rdr_0__b;"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !inOrder(vcl, tc.seq...) {
				t.Fatalf("not in this order in the VCL: %q", tc.seq)
			}
		})
	}
	// TLS origins cannot be reached: declared, and the route says so.
	if len(setup.LimitsFor("PRT-1", "h2")) == 0 {
		t.Errorf("no PRT-1 limit for the h2 scenario: %+v", setup.Limits)
	}
	if !inOrder(vcl, "# scenario h2\n", "return (synth(502));", "# scenario https\n") {
		t.Errorf("the h2 route does not answer 502")
	}
	if len(setup.LimitsFor("TMO-5", "tmo5")) == 0 {
		t.Errorf("no TMO-5 limit (responseTimeout)")
	}
}

// The generated VCL compiles (varnishd -C).
func TestVCLCompiles(t *testing.T) {
	bin := peertest.Binary(t, "varnish", "varnishd")
	_, vcl, _ := generate(t)
	dir := t.TempDir()
	f := filepath.Join(dir, VCLFile)
	if err := os.WriteFile(f, []byte(vcl), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-j", "none", "-C", "-f", f, "-n", filepath.Join(dir, "work")).CombinedOutput(); err != nil {
		t.Fatalf("varnishd -C: %v\n%s", err, out[max(0, len(out)-3000):])
	}
}

// The real varnishd, on the generated configuration, in front of the
// emulators: a request reaches the origin through its route, and a
// refused primary fails over (ATT-3, ATT-5 CONNECT_FAILURE).
func TestVarnishServesThroughTheEmulators(t *testing.T) {
	run := peertest.Run(t, Peer{}, peertest.Binary(t, "varnish", "varnishd"), topology.Strict, 3*time.Minute)
	emu, topo, env := run.Emu, run.Topo, run.Env
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	r, err := peertest.Get(ctx, env.Listen, topo.ClientHost, "/c/plain/varnish-test/obj")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != 200 || r.Header.Get(topology.RouteHeader) != "plain" {
		t.Fatalf("GET /c/plain/...: %d, %s %q, want 200 and the route header", r.Status, topology.RouteHeader, r.Header.Get(topology.RouteHeader))
	}
	reqs, err := emu.Journal().WaitEnded(ctx, journal.Query{PathPrefix: "/c/plain/varnish-test/"}, 1)
	if err != nil || len(reqs) != 1 || reqs[0].Listener != topology.ListenerA {
		t.Fatalf("journal: %+v, %v; want one request on listener a", reqs, err)
	}

	// cf-refuse: the primary refuses the connection, b answers.
	r, err = peertest.Get(ctx, env.Listen, topo.ClientHost, "/c/cf-refuse/varnish-test/obj")
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ = emu.Journal().WaitEnded(ctx, journal.Query{PathPrefix: "/c/cf-refuse/varnish-test/"}, 1)
	if r.Status != 200 || len(reqs) != 1 || reqs[0].Listener != topology.ListenerB {
		t.Fatalf("cf-refuse: %d, journal %+v; want 200 from listener b", r.Status, reqs)
	}

	// retry-5xx: a 503 then the object (ATT-5 HTTP_5XX, maxAttempts 2).
	if _, err := emu.AddRules(rules.Rule{Match: rules.Match{PathPrefix: "/c/retry-5xx/varnish-test/"}, Times: 1,
		Action: rules.Action{Status: 503}}); err != nil {
		t.Fatal(err)
	}
	r, err = peertest.Get(ctx, env.Listen, topo.ClientHost, "/c/retry-5xx/varnish-test/obj")
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ = emu.Journal().WaitEnded(ctx, journal.Query{PathPrefix: "/c/retry-5xx/varnish-test/"}, 2)
	if r.Status != 200 || len(reqs) != 2 || reqs[0].Status != 503 {
		t.Fatalf("retry-5xx: %d, journal %+v; want 503 then 200", r.Status, reqs)
	}
}

// The checked-in expectations (suites/peers/expectations/varnish.json) are
// valid: catalog rules, known statuses, a reason for every non-pass.
func TestExpectationsAreValid(t *testing.T) {
	e, err := peers.ReadExpectations("../expectations/varnish.json")
	if err != nil {
		t.Fatal(err)
	}
	if e.Peer != "varnish" || e.Profile != topology.Strict.Name {
		t.Fatalf("expectations for %s in the %s profile", e.Peer, e.Profile)
	}
}
