package trafficserver

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Peer is Apache Traffic Server 9 as a suites/peers peer.
type Peer struct{}

var _ peers.Peer = Peer{}

// Name implements peers.Peer.
func (Peer) Name() string { return "trafficserver" }

// Package implements peers.Peer.
func (Peer) Package() string { return "trafficserver" }

// Binaries implements peers.Peer.
func (Peer) Binaries() []string { return []string{"traffic_server", "/usr/bin/traffic_server"} }

// Generate writes the runroot into env.Dir; traffic_server runs in the
// foreground (no traffic_manager) with TS_RUNROOT pointing at it.
func (Peer) Generate(topo *topology.Neutral, env peers.Env) (*peers.Setup, error) {
	files, err := Config(topo, Options{Dir: env.Dir, Listen: env.Listen, CAFile: env.OriginCA, Resolve: env.Resolve})
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"etc", "run", "log", "cache", "share"} {
		if err := os.MkdirAll(env.Path(d), 0o755); err != nil {
			return nil, fmt.Errorf("trafficserver: %w", err)
		}
	}
	if err := bodyFactory(env.Path("etc/body_factory")); err != nil {
		return nil, err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(env.Dir, name), []byte(content), 0o644); err != nil {
			return nil, fmt.Errorf("trafficserver: writing %s: %w", name, err)
		}
	}
	return &peers.Setup{
		Command: []string{env.Binary, "--bind_stdout", env.Path("log/traffic.out"), "--bind_stderr", env.Path("log/traffic.out")},
		Environ: []string{"TS_RUNROOT=" + env.Path("runroot.yaml")},
		Health:  "/",
		Limits:  Limits(topo),
		Logs:    &peers.LogSource{Path: env.Path("log/access.log"), Fields: []string{"uri", "status", "origin_ip", "cache_status", "backend_latency_ms", "range"}},
		Notes: []string{
			"connectTimeout is connect_attempts_timeout (time to first byte, whole seconds), readTimeout transaction_no_activity_timeout_out, responseTimeout transaction_active_timeout_out (from the start of the origin transaction)",
			"failover chains are parent.config rules (origin-server parents in strict order, the primary's retryable statuses as simple/unavailable-server retry responses)",
		},
	}, nil
}

// systemBodyFactory is where Debian's package keeps the error page
// templates; traffic_server 9.2 crashes answering an error without them.
const systemBodyFactory = "/etc/trafficserver/body_factory"

// bodyFactory copies the error page templates into dst. Without the
// package (no traffic_server to run either) it writes an empty template
// set, so that generating still works, e.g. in the generator's tests.
func bodyFactory(dst string) error {
	if _, err := os.Stat(systemBodyFactory); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Join(dst, "default"), 0o755); err != nil {
			return fmt.Errorf("trafficserver: %w", err)
		}
		return os.WriteFile(filepath.Join(dst, "default", ".body_factory_info"), []byte("# no templates: "+systemBodyFactory+" is missing\n"), 0o644)
	}
	err := filepath.WalkDir(systemBodyFactory, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(systemBodyFactory, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("trafficserver: copying the error page templates (%s): %w", systemBodyFactory, err)
	}
	return nil
}
