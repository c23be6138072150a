package httpd

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/suites/peers/genutil/gentest"
	"github.com/edgeconform/edgeconform/suites/peers/peertest"
	"github.com/edgeconform/edgeconform/suites/topology"
)

func TestConfigMapsScenarios(t *testing.T) {
	topo, env, setup := peertest.Generate(t, Peer{}, topology.Strict)
	b, err := os.ReadFile(env.Path("httpd.conf"))
	if err != nil {
		t.Fatal(err)
	}
	conf := string(b)
	port := func(l string) int { return topo.Ports[l] }
	for _, want := range []string{
		// the "*" host rule is the default virtual host, before the client host's
		"<VirtualHost 127.0.0.1:18999>\n  ServerName default.invalid\n",
		"ServerAlias edge.test alias.edge.test\n",
		// routes: 405 for a method not allowed, then the proxy rule
		"RewriteCond %{REQUEST_METHOD} !^(GET|HEAD|OPTIONS)$\n  RewriteRule ^/c/plain/(.*)$ - [R=405,L,E=EC_ROUTE:",
		// MTH-4: prio-first (900) is tried before prio (901), with its header condition
		"RewriteCond %{HTTP:X-Edgeconform-Prio} =first\n",
		// cf-refuse: refuse then b, in lbsets; the primary skipped for 1 s after a failure
		fmt.Sprintf("BalancerMember http://127.0.0.1:%d lbset=0 retry=1 connectiontimeout=10000ms timeout=10\n    BalancerMember http://127.0.0.1:%d lbset=1 retry=0", port("refuse"), port("b")),
		// protocols
		fmt.Sprintf("BalancerMember h2://127.0.0.1:%d ", port("h2")),
		fmt.Sprintf("BalancerMember https://127.0.0.1:%d ", port("https")),
		// HST-1: the origin's hostRewrite
		`RequestHeader set Host "own.origin.test"`,
		// MTH-7
		"^/c/rewrite/(.*)$ balancer://",
		// CCH
		"CacheEnable socache \"/c/cch-static-ttl/\"\n  <Location \"/c/cch-static-ttl/\">\n    CacheDefaultExpire 2\n    CacheMaxExpire 3\n",
		"SSLProxyCACertificateFile \"" + env.OriginCA + "\"",
		// ATT-2: unsafe methods reach the primary only
		"RewriteCond %{REQUEST_METHOD} !^(GET|HEAD|OPTIONS)$\n  RewriteRule ^/c/cf-refuse/(.*)$ balancer://r18-primary/c/cf-refuse/$1 [P,L,E=EC_ROUTE:r18]",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("httpd.conf lacks %q", want)
		}
	}
	if strings.Index(conf, "scenario prio-first") > strings.Index(conf, "scenario prio,") {
		t.Error("prio-first (priority 900) must come before prio (901)")
	}
	// cf-unlisted's primary does not retry connect failures: no failover member.
	i := strings.Index(conf, "# route r25 (cf-unlisted)")
	if sec := conf[i : i+strings.Index(conf[i:], "</Proxy>")]; i < 0 || strings.Count(sec, "BalancerMember") != 1 {
		t.Errorf("cf-unlisted: want a balancer of the primary only, got\n%s", sec)
	}
	if !strings.Contains(conf, "rw-dest/$1") {
		t.Error("pathPrefixRewrite not in the substitution")
	}
	if len(setup.LimitsFor("ATT-5", "")) == 0 || len(setup.LimitsFor("HST-2", "hst-fo-own")) == 0 {
		t.Error("limits for status retries and a failover's own Host not declared")
	}
}

// TestConfigtest runs `apache2 -t` on the generated configuration.
func TestConfigtest(t *testing.T) {
	bin := gentest.Binary(t, Peer{})
	topo := peertest.Topology(t, topology.Strict)
	env := peertest.Env(t, Peer{}, topology.Strict)
	env.Binary = bin
	env.OriginCA = writeCA(t, env.Dir)
	setup, err := Peer{}.Generate(topo, env)
	if err != nil {
		t.Fatal(err)
	}
	args := append(setup.Command[1:len(setup.Command)-1], "-t")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), setup.Environ...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apache2 -t: %v\n%s", err, out)
	}
}

func writeCA(t *testing.T, dir string) string {
	t.Helper()
	emu, err := originemu.New(originemu.Config{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "origin-ca.pem")
	if err := os.WriteFile(path, emu.CAPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestThroughHTTPD starts httpd on the generated configuration and sends
// requests through it to an emulator: a plain route, an h2 origin with its
// certificate verified against the rewritten Host, a failover after a
// refused connection, and a cached object.
func TestThroughHTTPD(t *testing.T) {
	l := gentest.Start(t, Peer{}, map[string]originemu.Profile{"a": originemu.HTTP, "b": originemu.HTTP,
		"h2": originemu.H2, "refuse": originemu.Refuse}, "logs/error.log", "logs/access.log")
	for _, tc := range []struct{ path, listener, host string }{
		{"/c/plain/x", "a", "edge.test"}, {"/c/hst-origin/x", "h2", "own.origin.test"}, {"/c/cf-refuse/x", "b", "edge.test"},
	} {
		st, h := l.Do(t, "GET", tc.path)
		if st != 200 || h.Get(topology.RouteHeader) == "" {
			t.Errorf("GET %s: status %d, route header %q; want 200 and the route's header", tc.path, st, h.Get(topology.RouteHeader))
			continue
		}
		reqs, err := l.Emu.Journal().WaitEnded(l.Ctx, journal.Query{PathPrefix: tc.path}, 1)
		if err != nil || len(reqs) != 1 || reqs[0].Listener != tc.listener || reqs[0].Host != tc.host {
			t.Errorf("GET %s: journal %+v (%v), want one request on %s with Host %s", tc.path, reqs, err, tc.listener, tc.host)
		}
	}
	if st, _ := l.Do(t, "GET", "/nowhere"); st != 404 {
		t.Errorf("no route: %d, want 404", st)
	}
	// TMO-5: a body stalled after 100 bytes is cut at readTimeout (2 s on
	// tmo5), not at a timeout read as 2000 s.
	if _, err := l.Emu.AddRules(rules.Rule{Match: rules.Match{PathPrefix: "/c/tmo5/"}, Action: rules.Action{Stall: &rules.Cut{AfterBytes: ptr(int64(100))}}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	l.Do(t, "GET", "/c/tmo5/stalled")
	if took, read := time.Since(start), time.Duration(l.Topo.Chain("tmo5-0")[0].Timeouts.ReadMs)*time.Millisecond; took > read+3*time.Second {
		t.Errorf("a stalled body was cut after %s, readTimeout is %s", took.Round(time.Millisecond), read)
	}
	// CCH: the second GET of a cacheable object is a hit.
	for i := 0; i < 2; i++ {
		if st, _ := l.Do(t, "GET", "/c/cch-static/obj"); st != 200 {
			t.Fatalf("GET /c/cch-static/obj: %d", st)
		}
	}
	if reqs := l.Emu.Journal().Query(journal.Query{PathPrefix: "/c/cch-static/"}).Requests; len(reqs) != 1 {
		t.Errorf("cch-static: %d origin requests for two GETs, want 1 (the second from the cache)", len(reqs))
	}
}

func ptr[T any](v T) *T { return &v }
