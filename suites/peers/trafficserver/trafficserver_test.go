package trafficserver

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/suites/peers/genutil/gentest"
	"github.com/edgeconform/edgeconform/suites/peers/peertest"
	"github.com/edgeconform/edgeconform/suites/topology"
)

func TestConfigMapsScenarios(t *testing.T) {
	topo, env, setup := peertest.Generate(t, Peer{}, topology.Strict)
	read := func(name string) string {
		b, err := os.ReadFile(env.Path(name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	remap, parent, records := read("etc/remap.config"), read("etc/parent.config"), read("etc/records.config")
	port := func(l string) int { return topo.Ports[l] }
	for _, c := range []struct{ file, text, want string }{
		// no failover: the IP, no name to resolve
		{"remap.config", remap, fmt.Sprintf("map http://edge.test/c/plain/ http://127.0.0.1:%d/c/plain/ @plugin=header_rewrite.so", port("a"))},
		{"remap.config", remap, fmt.Sprintf("map http://alias.edge.test/c/plain/ http://127.0.0.1:%d/c/plain/", port("a"))},
		{"remap.config", remap, fmt.Sprintf("map http://edge.test/c/rewrite/ http://127.0.0.1:%d/c/rw-dest/", port("a"))},
		{"remap.config", remap, fmt.Sprintf("map http://edge.test/c/https/ https://127.0.0.1:%d/c/https/", port("https"))},
		// a failover chain: names, so that parent selection applies
		{"remap.config", remap, fmt.Sprintf("map http://edge.test/c/cf-refuse/ http://refuse.origins.edgeconform.test:%d/c/cf-refuse/", port("refuse"))},
		{"hosts", read("etc/hosts"), "127.0.0.1 b.origins.edgeconform.test\n"},
		{"remap.config", remap, `regex_map http://.*\.deep\.mth\.edge\.test/ `},
		{"remap.config", remap, "@pparam=proxy.config.http.connect_attempts_max_retries=2"}, // unsafe: maxAttempts 3
		{"remap.config", remap, "@plugin=cachekey.so @pparam=--uri-type=pristine @pparam=--sort-params=true @pparam=--exclude-params=session @pparam=--include-headers=X-Edgeconform-Device @pparam=--include-cookies=edgeconform-variant"},
		{"parent.config", parent, fmt.Sprintf(`url_regex=/c/cf-refuse/ parent="refuse.origins.edgeconform.test:%d|1.0;b.origins.edgeconform.test:%d|1.0" round_robin=false go_direct=false parent_is_proxy=false`, port("refuse"), port("b"))},
		{"parent.config", parent, `simple_server_retry_responses="404" max_simple_retries=2`}, // att3: a, b, c
		{"records.config", records, "CONFIG proxy.config.http.server_ports STRING 18999:ip-in=127.0.0.1"},
		{"records.config", records, "CONFIG proxy.config.ssl.client.CA.cert.filename STRING origin-ca.pem"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s lacks %q", c.file, c.want)
		}
	}
	if t.Failed() {
		t.Logf("parent.config:\n%s", parent)
	}
	if !strings.Contains(remap, "# prio-first (priority 900): header and query criteria cannot be matched") {
		t.Error("prio-first's header criterion must leave it out of remap")
	}
	if len(setup.LimitsFor("PRT-1", "")) == 0 || len(setup.LimitsFor("MTH-4", "prio-first")) == 0 {
		t.Error("limits for h2 origins and header matches not declared")
	}
}

// TestThroughTrafficServer starts traffic_server on the generated
// configuration and sends requests through it to an emulator: a plain
// route, an HTTPS origin with its certificate verified, a failover after a
// refused connection (parent.config), a cache hit, a 405.
func TestThroughTrafficServer(t *testing.T) {
	l := gentest.Start(t, Peer{}, map[string]originemu.Profile{"a": originemu.HTTP, "b": originemu.HTTP,
		"https": originemu.HTTPS, "refuse": originemu.Refuse}, "log/traffic.out", "log/diags.log", "log/access.log")
	// Failover routes name their origins, resolved from the hosts file,
	// which traffic_server loads about a second after it starts serving.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if st, _ := l.Do(t, "GET", "/c/cf-refuse/ready"); st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failover route did not answer 200 within 10 s of the peer's start")
		}
	}
	for _, tc := range []struct{ path, listener string }{
		{"/c/plain/x", "a"}, {"/c/https/x", "https"}, {"/c/cf-refuse/x", "b"},
	} {
		st, h := l.Do(t, "GET", tc.path)
		if st != 200 || h.Get(topology.RouteHeader) == "" {
			t.Errorf("GET %s: status %d, route header %q; want 200 and the route's header", tc.path, st, h.Get(topology.RouteHeader))
			continue
		}
		reqs, err := l.Emu.Journal().WaitEnded(l.Ctx, journal.Query{PathPrefix: tc.path}, 1)
		if err != nil || len(reqs) != 1 || reqs[0].Listener != tc.listener || reqs[0].Host != "edge.test" {
			t.Errorf("GET %s: journal %+v (%v), want one request on %s with Host edge.test", tc.path, reqs, err, tc.listener)
		}
	}
	if st, h := l.Do(t, "POST", "/c/plain/x"); st != 405 || h.Get("Allow") != "GET, HEAD, OPTIONS" {
		t.Errorf("POST on a GET route: %d, Allow %q; want 405 with Allow", st, h.Get("Allow"))
	}
	if st, _ := l.Do(t, "GET", "/nowhere"); st != 404 {
		t.Errorf("no route: %d, want 404", st)
	}
	for i := 0; i < 2; i++ {
		if st, _ := l.Do(t, "GET", "/c/cch-static/obj"); st != 200 {
			t.Fatalf("GET /c/cch-static/obj: %d", st)
		}
	}
	if reqs := l.Emu.Journal().Query(journal.Query{PathPrefix: "/c/cch-static/"}).Requests; len(reqs) != 1 {
		t.Errorf("cch-static: %d origin requests for two GETs, want 1 (the second from the cache)", len(reqs))
	}
	// CCH-6: the client's host is part of the key (not the origin's).
	if st, _ := l.DoHost(t, "GET", "alias.edge.test", "/c/cch-static/obj"); st != 200 {
		t.Fatalf("GET /c/cch-static/obj on the alias host: %d", st)
	}
	if reqs := l.Emu.Journal().Query(journal.Query{PathPrefix: "/c/cch-static/"}).Requests; len(reqs) != 2 {
		t.Errorf("cch-static: %d origin requests after a GET on another host, want 2 (another host is another key)", len(reqs))
	}
}
