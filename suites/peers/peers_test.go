package peers_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/peers/peertest"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// fake is a peer whose "configuration" is one line per route: the prefix
// and the origin chain's addresses, the way a real generator walks the
// neutral topology. It has no total deadline across attempts.
type fake struct{ limits []peers.Limit }

func (fake) Name() string       { return "fake" }
func (fake) Package() string    { return "fake-cache" }
func (fake) Binaries() []string { return []string{"fake-cache", "/usr/sbin/fake-cache"} }

func (f fake) Generate(topo *topology.Neutral, env peers.Env) (*peers.Setup, error) {
	var b strings.Builder
	for _, pm := range topo.PathMatchers {
		for _, r := range pm.Routes {
			fmt.Fprintf(&b, "%s %s", pm.Name, r.Match[0].Prefix)
			for _, o := range topo.Chain(r.Origin) {
				fmt.Fprintf(&b, " %s:%d/%s/x%d", o.Address, o.Port, o.Protocol, o.MaxAttempts)
			}
			b.WriteByte('\n')
		}
	}
	conf := env.Path("fake.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
		return nil, fmt.Errorf("writing the fake configuration: %w", err)
	}
	return &peers.Setup{
		Command: []string{env.Binary, "-c", conf, "-listen", env.Listen},
		Health:  "/", Limits: f.limits,
		Logs: &peers.LogSource{Path: env.Path("access.jsonl"), Fields: []string{"uri", "status"}},
	}, nil
}

var deadline = peers.Limit{Rule: "ATT-9", Scenario: "att9", Reason: "no total deadline across attempts",
	Doc: "https://example.org/fake-cache/docs#timeouts"}

func TestFakePeerGenerates(t *testing.T) {
	for _, prof := range []topology.Profile{topology.Strict, topology.Lab} {
		topo, env, setup := peertest.Generate(t, fake{limits: []peers.Limit{deadline}}, prof)
		conf, err := os.ReadFile(filepath.Join(env.Dir, "fake.conf"))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := topo.Listener(topology.ListenerA)
		b, _ := topo.Listener(topology.ListenerB)
		want := fmt.Sprintf("main /c/att3/ 127.0.0.1:%d/HTTP/x2 127.0.0.1:%d/HTTP/x1", a.Port, b.Port)
		if !strings.Contains(string(conf), want) {
			t.Fatalf("%s: no %q in\n%s", prof.Name, want, conf)
		}
		if got := setup.LimitsFor("ATT-9", "att9"); len(got) != 1 || got[0] != deadline {
			t.Fatalf("limits for ATT-9: %+v", got)
		}
		if got := setup.LimitsFor("ATT-9", "tmo2"); len(got) != 0 {
			t.Fatalf("a limit for att9 applies to tmo2: %+v", got)
		}
	}
}

// Check names every problem of a Setup.
func TestSetupCheck(t *testing.T) {
	topo := peertest.Topology(t, topology.Strict)
	env := peertest.Env(t, fake{}, topology.Strict)
	for _, tc := range []struct {
		name  string
		setup peers.Setup
		want  []string
	}{
		{"no command", peers.Setup{Health: "/"}, []string{"no command"}},
		{"health", peers.Setup{Command: []string{"x"}, Health: "ftp://x"}, []string{"health"}},
		{"environ", peers.Setup{Command: []string{"x"}, Health: "/", Environ: []string{"JUSTNAME"}}, []string{"environ"}},
		{"limit", peers.Setup{Command: []string{"x"}, Health: "http://127.0.0.1:1/health", Limits: []peers.Limit{
			{Rule: "ATT-99", Scenario: "nope", Doc: "manual"}}},
			[]string{"rule is not in the catalog", "scenario is not in the topology", "no reason", "not a URL"}},
		{"logs outside", peers.Setup{Command: []string{"x"}, Health: "/", Logs: &peers.LogSource{Path: "/var/log/x.jsonl"}},
			[]string{"not inside the peer's directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.setup.Check(topo, env)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v: no %q", err, w)
				}
			}
		})
	}
	ok := peers.Setup{Command: []string{"x"}, Health: "/", Limits: []peers.Limit{deadline}}
	if err := ok.Check(topo, env); err != nil {
		t.Fatal(err)
	}
}

// The loopback topology reaches every origin at an IP: a generator needs
// no resolver.
func TestLoopbackAddressesAreIPs(t *testing.T) {
	topo := peertest.Topology(t, topology.Strict)
	for _, o := range topo.Origins {
		if o.Address != peers.LoopbackOriginHost {
			t.Fatalf("origin %s at %q", o.Name, o.Address)
		}
	}
}
