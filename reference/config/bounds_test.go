package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// boundsConfig is a valid configuration with a failover chain of chain
// origins, hostRules host rules of hostsPer hosts and matchers path
// matchers of routes route rules each.
func boundsConfig(chain, hostRules, hostsPer, matchers, routes int) *Config {
	c := &Config{Service: Service{Name: "s"}}
	for i := range chain {
		o := Origin{Name: fmt.Sprintf("o%d", i), OriginAddress: "o.example.com"}
		if i+1 < chain {
			o.FailoverOrigin = fmt.Sprintf("o%d", i+1)
		}
		c.Origins = append(c.Origins, o)
	}
	for m := range matchers {
		pm := PathMatcher{Name: fmt.Sprintf("m%d", m)}
		for r := range routes {
			pm.RouteRules = append(pm.RouteRules, RouteRule{Priority: Int64(r + 1), MatchRules: []MatchRule{{PrefixMatch: "/"}}, Origin: "o0"})
		}
		c.Service.Routing.PathMatchers = append(c.Service.Routing.PathMatchers, pm)
	}
	for h := range hostRules {
		hr := HostRule{PathMatcher: fmt.Sprintf("m%d", h%matchers)}
		for k := range hostsPer {
			hr.Hosts = append(hr.Hosts, fmt.Sprintf("h%d-%d.example.com", h, k))
		}
		c.Service.Routing.HostRules = append(c.Service.Routing.HostRules, hr)
	}
	return c
}

// Issue #12 item 10: configurable bounds, with defaults, on the failover
// chain (ATT-2: at most 4 attempts across all origins, so a fifth origin
// in a chain could never be tried), on hosts and on route rules per
// service.
func TestConfigBounds(t *testing.T) {
	cases := []struct {
		name  string
		c     *Config
		opts  Options
		field string // "" = valid
		word  string
	}{
		{"ATT-2 a chain of 4 origins", boundsConfig(4, 1, 1, 1, 1), Options{}, "", ""},
		{"ATT-2 a chain of 5 origins", boundsConfig(5, 1, 1, 1, 1), Options{}, "origins[0].failoverOrigin", "o0 -> o1 -> o2 -> o3 -> o4 has 5 origins, more than 4"},
		{"ATT-2 chain bound raised", boundsConfig(5, 1, 1, 1, 1), Options{MaxFailoverChain: 5}, "", ""},
		{"ATT-2 chain bound lowered", boundsConfig(3, 1, 1, 1, 1), Options{MaxFailoverChain: 2}, "origins[0].failoverOrigin", "has 3 origins, more than 2"},
		{"hosts at the default bound", boundsConfig(1, 10, 100, 1, 1), Options{}, "", ""},
		{"hosts over the default bound", boundsConfig(1, 11, 100, 1, 1), Options{}, "service.routing.hostRules", "1100 hosts, more than 1000"},
		{"hosts bound raised", boundsConfig(1, 11, 100, 1, 1), Options{MaxHosts: 1100}, "", ""},
		{"route rules at the default bound", boundsConfig(1, 10, 1, 10, 200), Options{}, "", ""},
		{"route rules over the default bound", boundsConfig(1, 11, 1, 11, 200), Options{}, "service.routing.pathMatchers", "2200 route rules, more than 2000"},
		{"route rules bound lowered", boundsConfig(1, 2, 1, 2, 6), Options{MaxRouteRules: 10}, "service.routing.pathMatchers", "12 route rules, more than 10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.c.Validate(c.opts)
			if c.field == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want valid", err)
				}
				return
			}
			es, _ := fielderr.As(err)
			if _, ok := findErr(es, c.field, c.word); !ok {
				t.Fatalf("Validate = %v, want %s: ...%s...", err, c.field, c.word)
			}
		})
	}
}

// Error messages quote at most a short prefix of a huge value, and name a
// non-ASCII character as the character it is.
func TestConfigMessages(t *testing.T) {
	huge := strings.Repeat("x", 100_000)
	cases := []struct {
		name, doc, field, want, notWant string
	}{
		{"a huge origin name", mutate(t, exampleYAML, "failoverOrigin: backup", "failoverOrigin: "+huge), "origins[0].failoverOrigin",
			`"` + strings.Repeat("x", 64) + `"... (100000 bytes)`, strings.Repeat("x", 65)},
		{"a huge host", mutate(t, exampleYAML, `hosts: ["*"]`, `hosts: ["a`+huge+`"]`), "service.routing.hostRules[0].hosts[0]",
			"got 100001", strings.Repeat("x", 65)},
		{"a non-ASCII host names its character", mutate(t, exampleYAML, `hosts: ["*"]`, `hosts: ["münchen.example"]`), "service.routing.hostRules[0].hosts[0]",
			`character 'ü' (U+00FC)`, "Ã"},
		{"a non-ASCII origin address", mutate(t, exampleYAML, "originAddress: primary.test", "originAddress: prïmary.test"), "origins[0].originAddress",
			`character 'ï' (U+00EF)`, "Ã"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es := loadErrs(t, c.doc, Options{})
			var msg string
			for _, e := range es {
				if e.Field == c.field {
					msg = e.Problem
				}
			}
			if !strings.Contains(msg, c.want) || strings.Contains(msg, c.notWant) || len(msg) > 400 {
				t.Errorf("%s: %q (%d bytes), want it to contain %q and not %q, at most 400 bytes", c.field, clipForTest(msg), len(msg), c.want, clipForTest(c.notWant))
			}
		})
	}
}

func clipForTest(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
