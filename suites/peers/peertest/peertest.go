// Package peertest helps generators' tests (suites/peers/<peer>): a
// loopback topology with made-up ports, an Env in a temporary directory,
// and the checks every generated Setup must pass.
package peertest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/testca"
	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Topology is the loopback topology in prof with listener i on port
// 20000+i (no emulators run).
func Topology(t testing.TB, prof topology.Profile) *topology.Neutral {
	t.Helper()
	ports := map[string]int{}
	for i, l := range topology.Listeners() {
		if l.DefaultPort == 0 {
			ports[l.Name] = 20000 + i
		}
	}
	n, err := topology.BuildNeutral(peers.LoopbackParams(prof, ports))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Env is an Env for p in a new temporary directory, listening on
// 127.0.0.1:18999, with a test CA's certificate as OriginCA (so that a
// peer's own configuration check can load it).
func Env(t testing.TB, p peers.Peer, prof topology.Profile) peers.Env {
	t.Helper()
	dir := t.TempDir()
	ca := filepath.Join(t.TempDir(), "origin-ca.pem")
	testCA, err := testca.New("edgeconform peertest CA")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, testCA.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := "/usr/sbin/" + p.Name()
	if b := p.Binaries(); len(b) > 0 {
		bin = b[0]
	}
	return peers.Env{Dir: dir, Listen: "127.0.0.1:18999", Binary: bin, Profile: prof.Name,
		OriginCA: ca, Resolve: peers.LoopbackResolve()}
}

// Generate runs p's generator on the loopback topology and checks the
// Setup (peers.Setup.Check) and that it wrote only inside env.Dir's tree.
func Generate(t testing.TB, p peers.Peer, prof topology.Profile) (*topology.Neutral, peers.Env, *peers.Setup) {
	t.Helper()
	topo := Topology(t, prof)
	env := Env(t, p, prof)
	setup, err := p.Generate(topo, env)
	if err != nil {
		t.Fatalf("%s: generating for the %s profile: %v", p.Name(), prof.Name, err)
	}
	if err := setup.Check(topo, env); err != nil {
		t.Fatalf("%s: %v", p.Name(), err)
	}
	entries, err := os.ReadDir(env.Dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("%s: nothing written to %s (%v)", p.Name(), env.Dir, err)
	}
	return topo, env, setup
}
