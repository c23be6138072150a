package caddy

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/testca"
	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/peers/genutil/gentest"
	"github.com/edgeconform/edgeconform/suites/peers/peertest"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// params are the loopback topology's parameters with every listener at
// a port (made up unless ports says otherwise).
func params(ports map[string]int) topology.Params {
	all := map[string]int{}
	for i, l := range topology.Listeners() {
		if l.DefaultPort == 0 {
			all[l.Name] = 20000 + i
		}
	}
	for k, v := range ports {
		all[k] = v
	}
	return peers.LoopbackParams(topology.Strict, all)
}

// TestGenerate checks the Setup the runner gets.
func TestGenerate(t *testing.T) {
	_, env, setup := peertest.Generate(t, Peer{}, topology.Strict)
	if setup.Command[1] != "run" || setup.Command[3] != env.Path("caddy.json") {
		t.Errorf("command %v", setup.Command)
	}
	if len(setup.LimitsFor("TMO-2", "")) == 0 || len(setup.LimitsFor("CCH-1", "cch-static")) == 0 {
		t.Error("no limits declared for the total deadline or the cache")
	}
}

func generate(t *testing.T, p topology.Params, caFile string) (obj, string) {
	t.Helper()
	n, err := topology.BuildNeutral(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Config(n, Options{Listen: "127.0.0.1:18000", CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	var cfg obj
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("the configuration is not JSON: %v", err)
	}
	return cfg, string(b)
}

// find returns the first object in v (depth first) for which ok holds.
func find(v any, ok func(obj) bool) obj {
	switch x := v.(type) {
	case map[string]any:
		if ok(x) {
			return x
		}
		for _, c := range x {
			if f := find(c, ok); f != nil {
				return f
			}
		}
	case []any:
		for _, c := range x {
			if f := find(c, ok); f != nil {
				return f
			}
		}
	}
	return nil
}

// routeOf returns the main route whose path_regexp is the scenario's prefix.
func routeOf(t *testing.T, cfg obj, scenario string) obj {
	t.Helper()
	pat := "^/c/" + scenario + "/"
	r := find(cfg["apps"], func(o obj) bool {
		m, _ := o["match"].([]any)
		return len(m) > 0 && fmt.Sprint(m[0].(obj)["path_regexp"]) == fmt.Sprint(obj{"pattern": pat})
	})
	if r == nil {
		t.Fatalf("no route for %s", pat)
	}
	return r
}

func TestConfigMapsScenarios(t *testing.T) {
	p := params(nil)
	cfg, text := generate(t, p, "/tmp/ca.pem")
	for _, tc := range []struct {
		scenario string
		check    func(t *testing.T, r obj)
	}{
		{"plain", func(t *testing.T, r obj) {
			rp := find(r, func(o obj) bool { return o["handler"] == "reverse_proxy" })
			if got := rp["upstreams"].([]any)[0].(obj)["dial"]; got != fmt.Sprintf("127.0.0.1:%d", p.Ports["a"]) {
				t.Errorf("upstream %v", got)
			}
			tr := rp["transport"].(obj)
			if tr["dial_timeout"] != "10000ms" || tr["read_timeout"] != "10000ms" {
				t.Errorf("timeouts %v", tr)
			}
			if al := find(r, func(o obj) bool { return o["status_code"] == float64(405) }); al == nil ||
				fmt.Sprint(al["headers"]) != "map[Allow:[GET, HEAD, OPTIONS]]" {
				t.Errorf("405 with Allow: %v", al)
			}
		}},
		{"retry-5xx", func(t *testing.T, r obj) {
			// Two attempts on a: the first one's handle_response runs the second.
			rp := find(r, func(o obj) bool { return o["handler"] == "reverse_proxy" })
			hr := rp["handle_response"].([]any)[0].(obj)
			if fmt.Sprint(hr["match"]) != "map[status_code:[5]]" {
				t.Errorf("handle_response match %v", hr["match"])
			}
			second := find(hr["routes"], func(o obj) bool { return o["handler"] == "reverse_proxy" })
			if second == nil {
				t.Fatal("no second attempt")
			}
			last := second["handle_response"].([]any)[0].(obj)
			if find(last["routes"], func(o obj) bool { return o["handler"] == "reverse_proxy" }) != nil ||
				find(last["routes"], func(o obj) bool { return o["status_code"] == float64(502) }) == nil {
				t.Errorf("the last attempt must answer 502 on a retryable status: %v", last)
			}
		}},
		{"att4", func(t *testing.T, r obj) {
			// 3 on a, then only 1 of b's 3: 4 attempts in all (ATT-3).
			var dials []string
			for rp := r; ; {
				rp = find(rp, func(o obj) bool { return o["handler"] == "reverse_proxy" })
				if rp == nil {
					break
				}
				dials = append(dials, rp["upstreams"].([]any)[0].(obj)["dial"].(string))
				hr, _ := rp["handle_response"].([]any)
				if len(hr) == 0 {
					break
				}
				rp = hr[0].(obj)
			}
			a, b := fmt.Sprintf("127.0.0.1:%d", p.Ports["a"]), fmt.Sprintf("127.0.0.1:%d", p.Ports["b"])
			if strings.Join(dials, " ") != strings.Join([]string{a, a, a, b}, " ") {
				t.Errorf("attempts %v", dials)
			}
		}},
		{"h2", func(t *testing.T, r obj) {
			tr := find(r, func(o obj) bool { return o["protocol"] == "http" })
			if fmt.Sprint(tr["versions"]) != "[2]" || tr["tls"].(obj)["server_name"] != "{http.request.host}" {
				t.Errorf("h2 transport %v", tr)
			}
		}},
		{"hst-both", func(t *testing.T, r obj) {
			rp := find(r, func(o obj) bool { return o["handler"] == "reverse_proxy" })
			if got := fmt.Sprint(rp["headers"]); got != "map[request:map[set:map[Host:[own.origin.test]]]]" {
				t.Errorf("origin hostRewrite wins (HST-1): %s", got)
			}
			if sni := rp["transport"].(obj)["tls"].(obj)["server_name"]; sni != "own.origin.test" {
				t.Errorf("SNI %v (HST-3)", sni)
			}
		}},
		{"icase", func(t *testing.T, r obj) {}},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			if tc.scenario == "icase" {
				if !strings.Contains(text, `"pattern": "(?i)^/c/icase/"`) {
					t.Error("ignoreCase route is not case-insensitive")
				}
				return
			}
			tc.check(t, routeOf(t, cfg, tc.scenario))
		})
	}
	// The primary's connect failure fails over in the error routes.
	errs := cfg["apps"].(obj)["http"].(obj)["servers"].(obj)["edgeconform"].(obj)["errors"]
	fo := find(errs, func(o obj) bool {
		rp, _ := o["upstreams"].([]any)
		return o["handler"] == "reverse_proxy" && len(rp) == 1 && rp[0].(obj)["dial"] == fmt.Sprintf("127.0.0.1:%d", p.Ports["b"])
	})
	if fo == nil || !strings.Contains(text, `"pattern": "^/c/cf-refuse/"`) {
		t.Error("no failover to b in the error routes")
	}
}

// TestCaddyValidates runs `caddy validate` on the generated configuration.
func TestCaddyValidates(t *testing.T) {
	bin := gentest.Binary(t, Peer{})
	dir := t.TempDir()
	ca, err := testca.New("caddy test")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	_, text := generate(t, params(nil), caFile)
	path := filepath.Join(dir, "caddy.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "validate", "--config", path)
	cmd.Env = append(os.Environ(), Environ(dir)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("caddy validate: %v\n%s", err, out)
	}
}

// TestThroughCaddy starts Caddy on the generated configuration and sends
// requests through it to an emulator: a plain route, an h2 origin with the
// certificate verified, a failover after a refused connection, a 503
// retried on the same origin (ATT-5).
func TestThroughCaddy(t *testing.T) {
	l := gentest.Start(t, Peer{}, map[string]originemu.Profile{"a": originemu.HTTP, "b": originemu.HTTP,
		"h2": originemu.H2, "refuse": originemu.Refuse}, "access.log")
	if _, err := l.Emu.AddRules(rules.Rule{Match: rules.Match{PathPrefix: "/c/retry-5xx/"}, Action: rules.Action{Status: 503}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, listener string
		attempts       int
	}{
		{"/c/plain/x", "a", 1}, {"/c/h2/x", "h2", 1}, {"/c/cf-refuse/x", "b", 1}, {"/c/retry-5xx/x", "a", 2},
	} {
		if st, _ := l.Do(t, "GET", tc.path); st != 200 {
			t.Errorf("GET %s: status %d, want 200", tc.path, st)
			continue
		}
		reqs, err := l.Emu.Journal().WaitEnded(l.Ctx, journal.Query{PathPrefix: tc.path}, tc.attempts)
		if err != nil || len(reqs) != tc.attempts {
			t.Errorf("GET %s: journal %+v (%v), want %d requests", tc.path, reqs, err, tc.attempts)
			continue
		}
		if last := reqs[len(reqs)-1]; last.Listener != tc.listener || last.Host != "edge.test" || last.Status != 200 {
			t.Errorf("GET %s: the last origin request %+v, want 200 on %s with Host edge.test", tc.path, last, tc.listener)
		}
	}
	if st, _ := l.Do(t, "GET", "/nowhere"); st != 404 {
		t.Errorf("no route: %d, want 404", st)
	}
	// MTH-5: "mthprefix.*" matches a host of any number of labels after it.
	if st, h := l.DoHost(t, "GET", "mthprefix.example.net", "/x"); st != 200 || h.Get(topology.MatcherHeader) != topology.MTHPrefixMatcher {
		t.Errorf("Host mthprefix.example.net: %d, matcher %q; want 200 from %s", st, h.Get(topology.MatcherHeader), topology.MTHPrefixMatcher)
	}
}
