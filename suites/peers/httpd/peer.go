package httpd

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Peer is Apache httpd 2.4 (mod_proxy + mod_cache) as a suites/peers peer.
type Peer struct{}

var _ peers.Peer = Peer{}

// Name implements peers.Peer.
func (Peer) Name() string { return "httpd" }

// Package implements peers.Peer.
func (Peer) Package() string { return "apache2" }

// Binaries implements peers.Peer.
func (Peer) Binaries() []string { return []string{"apache2", "/usr/sbin/apache2", "httpd"} }

// Generate writes httpd.conf into env.Dir with the server root, pid,
// runtime and log files all inside it (the cache is in shared memory).
// Started as root, httpd's workers run as nobody; the files they use are
// opened by the parent before it drops privileges.
func (Peer) Generate(topo *topology.Neutral, env peers.Env) (*peers.Setup, error) {
	o := Options{Dir: env.Dir, Listen: env.Listen, CAFile: env.OriginCA, Resolve: env.Resolve}
	if os.Geteuid() == 0 {
		o.User, o.Group = "nobody", "nogroup"
		if _, err := user.LookupGroup("nogroup"); err != nil {
			o.Group = "nobody"
		}
	}
	for _, d := range []string{"run", "logs", "empty"} {
		if err := os.MkdirAll(env.Path(d), 0o755); err != nil {
			return nil, fmt.Errorf("httpd: %w", err)
		}
	}
	conf, err := Config(topo, o)
	if err != nil {
		return nil, err
	}
	path := env.Path("httpd.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("httpd: writing the configuration: %w", err)
	}
	return &peers.Setup{
		Command: []string{env.Binary, "-d", env.Dir, "-f", path, "-DFOREGROUND"},
		// Debian's apache2 binary reads its APACHE_* variables from the
		// environment; none are used by this configuration.
		Environ: []string{"APACHE_RUN_DIR=" + filepath.Join(env.Dir, "run")},
		Health:  "/",
		Limits:  Limits(topo),
		Notes: []string{
			"each route's origin chain is a balancer, members in ascending lbset; a member whose connect fails is in error state for retry=1 s (the primary) so the retry goes to the failover",
			"connectTimeout is connectiontimeout; readTimeout is timeout (which also bounds the wait for the response headers)",
		},
	}, nil
}
