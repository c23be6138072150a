package haproxy

import (
	"context"
	"os"
	"os/exec"
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

func generate(t *testing.T) (*topology.Neutral, peers.Env, *peers.Setup, string) {
	t.Helper()
	return peertest.GenerateWithCA(t, Peer{}, topology.Strict, ConfigFile)
}

// block returns the configuration section that starts with head.
func block(t *testing.T, cfg, head string) string {
	t.Helper()
	i := strings.Index(cfg, "\n"+head)
	if i < 0 {
		t.Fatalf("no section %q", head)
	}
	s := cfg[i+1:]
	if j := strings.Index(s, "\n\n"); j >= 0 {
		s = s[:j]
	}
	return s
}

func TestConfigMapsTheTopology(t *testing.T) {
	topo, _, setup, cfg := generate(t)
	a, _ := topo.Listener(topology.ListenerA)
	b, _ := topo.Listener(topology.ListenerB)
	h2, _ := topo.Listener(topology.ListenerH2)
	for _, tc := range []struct{ section, want string }{
		// ATT-3: the primary's 3 attempts, then the failover on the last retry.
		{"backend be_att4-0 ", "retries 3\n  retry-on 500 501 502 503 504\n  option redispatch -1"},
		{"backend be_att4-0 ", "server att4-1 127.0.0.1:" + itoa(b.Port)},
		// cf-refuse: one attempt each; retry on connect failures.
		{"backend be_cf-refuse-0 ", "retries 1\n  retry-on conn-failure empty-response response-timeout\n  option redispatch -1"},
		// tmo2: 1 attempt to the primary, then 2 to the failover.
		{"backend be_tmo2-0 ", "retries 2"},
		{"backend be_tmo2-0 ", "option redispatch -2"},
		// ATT-2: the unsafe twin never retries.
		{"backend be_unsafe-0_unsafe ", "retries 0\n  retry-on none"},
		// ATT-7: a final retryable status from the primary becomes 502.
		{"backend be_retry-404-0 ", "http-response set-status 502 if { srv_id 1 } { status 404 }"},
		// TMO-1/TMO-5: tmo5's readTimeout (2 units) is the server timeout.
		{"backend be_tmo5-0 ", "timeout connect 10000ms\n  timeout server 2000ms"},
		// PRT-1: h2 only, certificate verified against the SNI (the Host).
		{"backend be_h2-0 ", "server h2-0 127.0.0.1:" + itoa(h2.Port) + " ssl verify required ca-file"},
		{"backend be_h2-0 ", "alpn h2 proto h2"},
		{"backend be_https-0 ", "alpn http/1.1"},
		// HST-1: the origin's hostRewrite.
		{"backend be_hst-origin-0 ", "http-request set-header Host \"" + topo.OriginRewriteHost + "\""},
		// CCH-2: cch-static-ttl's defaultTtl.
		{"cache c_cch-static-ttl-0 ", "max-age 2"},
		{"frontend edge", "use_backend be_plain-0 if { var(txn.ec_route) -m str main/0 } { method GET HEAD OPTIONS }"},
		// MTH-1
		{"frontend edge", "hdr Allow \"GET, HEAD, POST\""},
		{"backend be_plain-0 ", "server plain-0 127.0.0.1:" + itoa(a.Port)},
	} {
		if s := block(t, cfg, tc.section); !strings.Contains(s, tc.want) {
			t.Errorf("%s: no %q in\n%s", tc.section, tc.want, s)
		}
	}
	fe := block(t, cfg, "frontend edge")
	// MTH-4: prio-first (priority 900) is matched before prio (901).
	if i, j := strings.Index(fe, "X-Edgeconform-Prio"), strings.Index(fe, "-m beg /c/prio/ }\n"); i < 0 || j < 0 || i > j {
		t.Errorf("prio-first is not matched before prio")
	}
	// MTH-5: the exact host before the wildcards, "*" last.
	if i, j, k := strings.Index(fe, "str(mth-exact)"), strings.Index(fe, "str(mth-long)"), strings.Index(fe, "str(mth-star)"); i > j || j > k {
		t.Errorf("host rules out of order: exact %d, long wildcard %d, * %d", i, j, k)
	}
	for _, rule := range []string{"ATT-9", "RDR-1", "COL-1"} {
		if len(setup.LimitsFor(rule, "")) == 0 {
			t.Errorf("no %s limit declared", rule)
		}
	}
	if len(setup.LimitsFor("ATT-3", "att3")) == 0 {
		t.Errorf("no ATT-3 limit for att3's three origins")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// The generated configuration is valid (haproxy -c).
func TestConfigIsValid(t *testing.T) {
	bin := peertest.Binary(t, "haproxy", "haproxy")
	_, env, _, _ := generate(t)
	if out, err := exec.Command(bin, "-c", "-f", env.Path(ConfigFile)).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
}

// The real haproxy in front of the emulators: a request through its
// route, a failover after a refused connection, a 503 retried (ATT-3,
// ATT-5), and an h2 origin over TLS verified with the emulators' CA.
func TestHAProxyServesThroughTheEmulators(t *testing.T) {
	run := peertest.Run(t, Peer{}, peertest.Binary(t, "haproxy", "haproxy"), topology.Strict, 30*time.Second)
	emu, topo, env := run.Emu, run.Topo, run.Env
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := emu.AddRules(rules.Rule{Match: rules.Match{PathPrefix: "/c/retry-5xx/haproxy-test/"}, Times: 1,
		Action: rules.Action{Status: 503}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scenario  string
		listeners []string
	}{
		{"plain", []string{topology.ListenerA}},
		{"cf-refuse", []string{topology.ListenerB}},
		{"retry-5xx", []string{topology.ListenerA, topology.ListenerA}},
		{"h2", []string{topology.ListenerH2}},
	} {
		prefix := topology.Prefix(tc.scenario) + "haproxy-test/"
		r, err := peertest.Get(ctx, env.Listen, topo.ClientHost, prefix+"obj")
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := emu.Journal().WaitEnded(ctx, journal.Query{PathPrefix: prefix}, len(tc.listeners))
		if r.Status != 200 || r.Header.Get(topology.RouteHeader) != tc.scenario || err != nil || len(reqs) != len(tc.listeners) {
			t.Fatalf("%s: %d (%s %q), journal %+v (%v); want 200 after %d origin requests", tc.scenario, r.Status,
				topology.RouteHeader, r.Header.Get(topology.RouteHeader), reqs, err, len(tc.listeners))
		}
		for i, l := range tc.listeners {
			if reqs[i].Listener != l {
				t.Fatalf("%s: request %d on listener %s, want %s", tc.scenario, i, reqs[i].Listener, l)
			}
		}
	}
	// LOG-2: the client request record of the failover names its origin.
	rec := run.LogRecord("/c/cf-refuse/haproxy-test/obj")
	if rec == nil || rec["msg"] != peers.ClientRecord || rec["origin"] != "cf-refuse-1" || rec["status"] != 200.0 || rec["retries"] != "+1" {
		b, _ := os.ReadFile(run.Setup.Logs.Path)
		t.Fatalf("cf-refuse's log record: %v\nlog:\n%s", rec, b)
	}
}

// The checked-in expectations (suites/peers/expectations/haproxy.json) are
// valid: catalog rules, known statuses, a reason for every non-pass.
func TestExpectationsAreValid(t *testing.T) {
	e, err := peers.ReadExpectations("../expectations/haproxy.json")
	if err != nil {
		t.Fatal(err)
	}
	if e.Peer != "haproxy" || e.Profile != topology.Strict.Name {
		t.Fatalf("expectations for %s in the %s profile", e.Peer, e.Profile)
	}
}
