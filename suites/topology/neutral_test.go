package topology

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The neutral topology conforms to its schema in every profile and
// format, and reads back the same.
func TestNeutralConformsToSchema(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prof      Profile
		reference bool
		project   string
	}{{"lab reference", Lab, true, ""}, {"strict reference", Strict, true, ""}, {"strict mediacdn", Strict, false, "p"}} {
		t.Run(tc.name, func(t *testing.T) {
			p := testParams(tc.prof)
			p.Reference, p.Project = tc.reference, tc.project
			n, err := BuildNeutral(p)
			if err != nil {
				t.Fatal(err)
			}
			b, err := NeutralJSON(n)
			if err != nil {
				t.Fatal(err)
			}
			if err := ValidateSchema(b); err != nil {
				t.Fatal(err)
			}
			back, err := ParseNeutral(b)
			if err != nil {
				t.Fatal(err)
			}
			b2, _ := NeutralJSON(back)
			if string(b) != string(b2) {
				t.Fatal("the topology does not read back the same")
			}
			// topology.json stays the parameters file the suites read.
			path := filepath.Join(t.TempDir(), ParamsFile)
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := ReadParams(path); err != nil || got.ClientHost != p.ClientHost || got.Ports[ListenerA] != p.Ports[ListenerA] {
				t.Fatalf("ReadParams: %+v, %v", got, err)
			}
		})
	}
}

// Every origin of the neutral topology has the settings the reference's
// configuration gives it, with defaults applied; every route is there.
func TestNeutralMatchesBuild(t *testing.T) {
	p := testParams(Lab)
	p.Reference = true
	cfg, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	n, err := BuildNeutral(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Origins) != len(cfg.Origins) {
		t.Fatalf("%d origins, the configuration has %d", len(n.Origins), len(cfg.Origins))
	}
	for _, o := range cfg.Origins {
		e := cfg.Effective(o)
		no, ok := n.Origin(o.Name)
		if !ok {
			t.Fatalf("origin %s missing", o.Name)
		}
		if no.MaxAttempts != e.MaxAttempts || !slices.Equal(no.RetryConditions, e.RetryConditions) ||
			no.Timeouts.Connect() != e.ConnectTimeout || no.Timeouts.MaxAttempts() != e.MaxAttemptsTimeout ||
			no.Timeouts.Read() != e.ReadTimeout || no.Timeouts.Response() != e.ResponseTimeout ||
			no.Failover != e.Failover || no.HostRewrite != e.HostRewrite || !slices.Equal(no.RedirectCodes, e.RedirectCodes) {
			t.Errorf("origin %s: neutral %+v, configuration %+v", o.Name, no, e)
		}
		if no.Scenario == "" {
			t.Errorf("origin %s has no scenario", o.Name)
		}
	}
	routes := 0
	for _, pm := range n.PathMatchers {
		routes += len(pm.Routes)
	}
	want := 0
	for _, pm := range cfg.Service.Routing.PathMatchers {
		want += len(pm.RouteRules)
	}
	if routes != want {
		t.Fatalf("%d routes, the configuration has %d", routes, want)
	}
}

// Concrete scenarios carry what generators need, as data.
func TestNeutralScenarios(t *testing.T) {
	p := testParams(Lab)
	n, err := BuildNeutral(p)
	if err != nil {
		t.Fatal(err)
	}
	route := func(scenario string) NeutralRoute {
		t.Helper()
		for _, r := range n.PathMatchers[0].Routes {
			if r.Scenario == scenario {
				return r
			}
		}
		t.Fatalf("no route for %s", scenario)
		return NeutralRoute{}
	}
	// att3: a three-origin chain with its own retry settings.
	chain := n.Chain(route("att3").Origin)
	if len(chain) != 3 || chain[0].MaxAttempts != 2 || !slices.Equal(chain[0].RetryConditions, []string{NF}) ||
		!slices.Equal(chain[2].RetryConditions, []string{CF}) || chain[2].Failover != "" {
		t.Fatalf("att3 chain %+v", chain)
	}
	// tmo5-cap: readTimeout unset, so the default capped by responseTimeout (TMO-5).
	if o, _ := n.Origin(OriginName("tmo5-cap", 0)); o.Timeouts.Read() != p.Profile.U(3) {
		t.Fatalf("tmo5-cap timeouts %+v", o.Timeouts)
	}
	// Methods default to GET, HEAD, OPTIONS; cache mode defaults to BYPASS_CACHE in the topology.
	if r := route("plain"); !slices.Equal(r.Methods, []string{"GET", "HEAD", "OPTIONS"}) || r.Cache.Mode != "BYPASS_CACHE" {
		t.Fatalf("plain route %+v", r)
	}
	if r := route("cch-static-ttl"); r.Cache.DefaultTTLSeconds == nil || *r.Cache.DefaultTTLSeconds != CCHDefaultTTL || *r.Cache.MaxTTLSeconds != CCHMaxTTL {
		t.Fatalf("cch-static-ttl cache %+v", r.Cache)
	}
	if r := route("cch-negpol"); r.Cache.NegativeCachingPolicy["404"] != 60 {
		t.Fatalf("cch-negpol cache %+v", r.Cache)
	}
	if r := route("hst-route"); r.URLRewrite == nil || r.URLRewrite.Host != p.RouteRewriteHost {
		t.Fatalf("hst-route rewrite %+v", r.URLRewrite)
	}
	if o, _ := n.Origin(OriginName("prt-port80", 0)); !o.DefaultPort || o.Port != 80 || o.Address != p.DefaultPortHost {
		t.Fatalf("prt-port80 origin %+v", o)
	}
	if s, ok := n.Scenario("cf-refuse"); !ok || !slices.Equal(s.Listeners, []string{ListenerRefuse, ListenerB}) {
		t.Fatalf("cf-refuse scenario %+v", s)
	}
	// Without -format reference, reference-only scenarios are omitted, with the reason.
	if _, ok := n.Scenario("rdr-allow"); ok {
		t.Fatal("rdr-allow present in a topology not for the reference")
	}
	if !slices.ContainsFunc(n.Omitted, func(o OmittedScenario) bool { return o.Name == "rdr-allow" && o.Reason != "" }) {
		t.Fatalf("omitted %+v", n.Omitted)
	}
	if s, ok := n.Scenario(MTHScenario); !ok || len(s.PathMatchers) != 5 {
		t.Fatalf("mth scenario %+v", s)
	}
}

// A topology that does not conform, or does not hang together, is refused
// with what is wrong.
func TestParseNeutralRejects(t *testing.T) {
	n, err := BuildNeutral(testParams(Strict))
	if err != nil {
		t.Fatal(err)
	}
	good, _ := NeutralJSON(n)
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	origin0 := func(m map[string]any) map[string]any { return m["origins"].([]any)[0].(map[string]any) }
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"version", "schemaVersion", edit(func(m map[string]any) { m["schemaVersion"] = "edgeconform.topology/v0" })},
		{"maxAttempts", "maxAttempts", edit(func(m map[string]any) { origin0(m)["maxAttempts"] = 9 })},
		{"unknown field", "surprise", edit(func(m map[string]any) { origin0(m)["surprise"] = true })},
		{"dangling failover", "is not an origin", edit(func(m map[string]any) { origin0(m)["failover"] = "nowhere" })},
		{"not JSON", "decoding", []byte("{")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseNeutral(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %q", err, tc.want)
			}
		})
	}
	if _, err := LoadNeutral(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Fatal("a missing file was accepted")
	}
}

// suites/README.md lists every listener with its originemu profile, as
// topology.Listeners has them (names and profiles differ: expired is
// tls-expired, syndrop is syn-drop).
func TestREADMEListenerTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range Listeners() {
		row := "| `" + l.Name + "` | `" + string(l.Profile) + "`"
		if !strings.Contains(string(b), row) {
			t.Errorf("suites/README.md has no row %q", row)
		}
	}
}

// The handles are the scenarios, one each, in the same order.
func TestHandles(t *testing.T) {
	hs := Handles()
	ss := Scenarios()
	if len(hs) != len(ss) {
		t.Fatalf("%d handles, %d scenarios", len(hs), len(ss))
	}
	for i, h := range hs {
		if string(h) != ss[i].Name {
			t.Errorf("handle %d is %q, scenario %q", i, h, ss[i].Name)
		}
		if _, ok := h.Scenario(); !ok {
			t.Errorf("handle %q has no scenario", h)
		}
	}
}
