package squid

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/peers/peertest"
	"github.com/edgeconform/edgeconform/suites/topology"
)

func generate(t *testing.T) (*topology.Neutral, peers.Env, *peers.Setup, string) {
	t.Helper()
	return peertest.GenerateWithCA(t, Peer{}, topology.Strict, ConfigFile)
}

// The generated configuration parses (squid -k parse).
func TestConfigParses(t *testing.T) {
	bin := peertest.Binary(t, "squid", "squid")
	_, env, _, _ := generate(t)
	out, err := exec.Command(bin, "-k", "parse", "-f", env.Path(ConfigFile)).CombinedOutput()
	if err != nil {
		t.Fatalf("squid -k parse: %v\n%s", err, out[max(0, len(out)-3000):])
	}
}

// The real squid in front of the emulators: a request through its route,
// a failover after a refused connection (ATT-3, ATT-5), an HTTPS origin
// verified with the emulators' CA, and an origin's own request header
// (HST-6).
func TestSquidServesThroughTheEmulators(t *testing.T) {
	run := peertest.Run(t, Peer{}, peertest.Binary(t, "squid", "squid"), topology.Strict, 30*time.Second)
	emu, topo, env := run.Emu, run.Topo, run.Env
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		scenario, listener string
		header, value      string // a request header the origin must see
	}{
		{"plain", topology.ListenerA, "", ""},
		{"cf-refuse", topology.ListenerB, "", ""},
		{"https", topology.ListenerHTTPS, "", ""},
		{"hst6", topology.ListenerA, "X-Edgeconform-Origin", "primary"},
	} {
		prefix := topology.Prefix(tc.scenario) + "squid-test/"
		r, err := peertest.Get(ctx, env.Listen, topo.ClientHost, prefix+"obj")
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := emu.Journal().WaitEnded(ctx, journal.Query{PathPrefix: prefix}, 1)
		if r.Status != 200 || r.Header.Get(topology.RouteHeader) != tc.scenario || err != nil || len(reqs) != 1 || reqs[0].Listener != tc.listener {
			log, _ := os.ReadFile(env.Path("cache.log"))
			t.Fatalf("%s: %d (%s %q), journal %+v (%v); want 200 from listener %s\nbody: %.9000s\ncache.log:\n%s", tc.scenario, r.Status,
				topology.RouteHeader, r.Header.Get(topology.RouteHeader), reqs, err, tc.listener, r.Body, log[max(0, len(log)-300):])
		}
		if tc.header != "" {
			got := ""
			for _, h := range reqs[0].Headers {
				if strings.EqualFold(h.Name, tc.header) {
					got = h.Value
				}
			}
			if got != tc.value {
				t.Fatalf("%s: the origin got %s %q, want %q", tc.scenario, tc.header, got, tc.value)
			}
		}
	}
	// LOG-2: the failover's record names its cache_peer.
	rec := run.LogRecord("/c/cf-refuse/squid-test/obj")
	if rec == nil || rec["msg"] != peers.ClientRecord || rec["origin"] != "p_cf_refuse_1_0" || rec["status"] != 200.0 {
		b, _ := os.ReadFile(run.Setup.Logs.Path)
		t.Fatalf("cf-refuse's log record: %v\nlog:\n%s", rec, b)
	}
}

func TestConfigMapsTheTopology(t *testing.T) {
	topo, env, setup, cfg := generate(t)
	a, _ := topo.Listener(topology.ListenerA)
	for _, want := range []string{
		"http_port 127.0.0.1:18999 accel vhost",
		"pid_filename " + env.Path("squid.pid"),
		// ATT-3: att3's primary twice, then b, then c (4 attempts).
		"cache_peer 127.0.0.1 parent " + strconv.Itoa(a.Port) + " 0 no-query no-digest no-netdb-exchange originserver name=p_att3_0_0 ",
		"name=p_att3_0_1 ",
		"name=p_att3_1_0 ",
		"name=p_att3_2_0 ",
		// TMO-1: cf-blackhole's connectTimeout (2 units).
		"name=p_cf_blackhole_0_0 connect-fail-limit=1000000 connect-timeout=2",
		// HST-1: the origin's hostRewrite; the route's for hst-route.
		"name=p_hst_origin_0_0 connect-fail-limit=1000000 connect-timeout=10 forceddomain=" + topo.OriginRewriteHost + " tls ",
		"name=p_hst_route_0_0 connect-fail-limit=1000000 connect-timeout=10 forceddomain=" + topo.RouteRewriteHost + " tls ",
		// HST-3: verified against the Host sent.
		"tls-domain=" + topo.OriginRewriteHost + " tls-cafile=" + env.OriginCA,
		// CCH-2: the default TTL of an hour for cch-static; FORCE_CACHE_ALL ignores directives.
		"refresh_pattern ^[a-z]+://[^/]+/c/cch-static/ 60 0% 1440\n",
		"refresh_pattern ^[a-z]+://[^/]+/c/cch-force/ 60 0% 60 override-expire",
		"collapsed_forwarding on",
		"forward_max_tries 4",
		"reply_header_add X-Edgeconform-Route \"plain\" pm_main",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("no %q in the configuration", want)
		}
	}
	// A route's peers are allowed only for it.
	if !strings.Contains(cfg, "cache_peer_access p_att3_1_0 allow pm_main") || !strings.Contains(cfg, "cache_peer_access p_att3_1_0 deny all") {
		t.Errorf("p_att3_1_0 is not restricted to its route")
	}
	// MTH-4: prio (901) excludes prio-first (900), tried before it.
	i := strings.Index(cfg, "# scenario prio-first\nacl ")
	j := strings.Index(cfg, "# scenario prio\nacl ")
	if i < 0 || j < 0 || i > j {
		t.Errorf("prio-first (%d) is not before prio (%d)", i, j)
	}
	for _, rule := range []string{"PRT-1", "MTH-1", "ATT-7", "RDR-1"} {
		if len(setup.LimitsFor(rule, "")) == 0 {
			t.Errorf("no %s limit declared", rule)
		}
	}
}

// The checked-in expectations (suites/peers/expectations/squid.json) are
// valid: catalog rules, known statuses, a reason for every non-pass.
func TestExpectationsAreValid(t *testing.T) {
	e, err := peers.ReadExpectations("../expectations/squid.json")
	if err != nil {
		t.Fatal(err)
	}
	if e.Peer != "squid" || e.Profile != topology.Strict.Name {
		t.Fatalf("expectations for %s in the %s profile", e.Peer, e.Profile)
	}
}
