package caddy

import (
	"fmt"
	"os"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Peer is Caddy 2 as a suites/peers peer.
type Peer struct{}

var _ peers.Peer = Peer{}

// Name implements peers.Peer.
func (Peer) Name() string { return "caddy" }

// Package implements peers.Peer.
func (Peer) Package() string { return "caddy" }

// Binaries implements peers.Peer.
func (Peer) Binaries() []string { return []string{"caddy", "/usr/bin/caddy"} }

// Generate writes caddy.json into env.Dir; Caddy runs with `caddy run`,
// its admin API off and its storage, config and data directories inside
// env.Dir (HOME and the XDG directories point there, so that nothing is
// autosaved elsewhere).
func (Peer) Generate(topo *topology.Neutral, env peers.Env) (*peers.Setup, error) {
	b, err := Config(topo, Options{Listen: env.Listen, CAFile: env.OriginCA, AccessLog: env.Path("access.log"),
		Storage: env.Path("storage"), Resolve: env.Resolve})
	if err != nil {
		return nil, err
	}
	path := env.Path("caddy.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return nil, fmt.Errorf("caddy: writing the configuration: %w", err)
	}
	return &peers.Setup{
		Command: []string{env.Binary, "run", "--config", path},
		Environ: Environ(env.Dir),
		Health:  "/",
		Limits:  Limits(topo),
		Notes: []string{
			"attempts are unrolled into nested reverse_proxy handlers (handle_response on the retryable statuses); a primary's connect failure fails over through the server's error routes",
			"connectTimeout is dial_timeout and response_header_timeout; readTimeout is read_timeout",
		},
	}, nil
}

// Environ keeps Caddy's home, config and data directories inside dir.
func Environ(dir string) []string {
	return []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + dir + "/config", "XDG_DATA_HOME=" + dir + "/data"}
}
