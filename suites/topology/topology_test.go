package topology

import (
	"testing"

	"github.com/edgeconform/edgeconform/reference/config"
)

func testParams(prof Profile) Params {
	p := Params{Profile: prof, ClientHost: "edge.test", OriginHost: "origin.test", AltHost: "alt.origin.test",
		RouteRewriteHost: "route.origin.test", OriginRewriteHost: "own.origin.test", Ports: map[string]int{},
		DefaultPortHost: "port.origin.test", GCSBucket: "vod"}
	for i, l := range Listeners() {
		p.Ports[l.Name] = 20000 + i
	}
	return p
}

// The generated configurations validate: the lab one in lab mode, the
// strict one within Media CDN's bounds.
func TestBuildValidates(t *testing.T) {
	for _, tc := range []struct {
		prof      Profile
		reference bool
	}{{Lab, true}, {Strict, true}, {Strict, false}} {
		p := testParams(tc.prof)
		p.Reference = tc.reference
		cfg, err := Build(p)
		if err != nil {
			t.Fatal(err)
		}
		y, err := ReferenceYAML(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := config.Load(y, config.Options{Lab: tc.prof.Lab}); err != nil {
			t.Fatalf("%s reference=%v: %v\n%s", tc.prof.Name, tc.reference, err, y)
		}
		if !tc.reference {
			if _, err := MediaCDN(cfg); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestLabNeedsLabMode(t *testing.T) {
	cfg, err := Build(testParams(Lab))
	if err != nil {
		t.Fatal(err)
	}
	y, _ := ReferenceYAML(cfg)
	if _, err := config.Load(y, config.Options{}); err == nil {
		t.Fatal("lab timeouts validated in strict mode")
	}
}

func TestScenarioNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Scenarios() {
		if seen[s.Name] {
			t.Fatalf("duplicate scenario %s", s.Name)
		}
		seen[s.Name] = true
	}
}
