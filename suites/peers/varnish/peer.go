package varnish

import (
	"fmt"
	"os"
	"time"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Peer is Varnish Cache 7 (varnishd, Debian package varnish).
type Peer struct{}

var _ peers.Peer = Peer{}

// Name is "varnish".
func (Peer) Name() string { return "varnish" }

// Package is the Debian package.
func (Peer) Package() string { return "varnish" }

// Binaries are where varnishd is looked for.
func (Peer) Binaries() []string { return []string{"varnishd", "/usr/sbin/varnishd"} }

// VCLFile is the generated VCL's name in env.Dir.
const VCLFile = "edgeconform.vcl"

// Generate writes the VCL into env.Dir and returns varnishd's foreground
// command line: no jail (-j none: it runs as the invoking user, all state
// in env.Dir/work), memory storage, at most 3 retries (ATT-4: 4 attempts).
func (Peer) Generate(topo *topology.Neutral, env peers.Env) (*peers.Setup, error) {
	vcl, limits, err := VCL(topo)
	if err != nil {
		return nil, err
	}
	path := env.Path(VCLFile)
	if err := os.WriteFile(path, []byte(vcl), 0o644); err != nil {
		return nil, fmt.Errorf("varnish: writing the VCL: %w", err)
	}
	s := &peers.Setup{
		Command: Command(env.Binary, env.Path("work"), env.Listen, path),
		Health:  "/",
		// The VCL is compiled to C and built with the C compiler first.
		Startup: 3 * time.Minute,
		Notes: []string{
			"connectTimeout is both connect_timeout and first_byte_timeout; readTimeout is between_bytes_timeout",
			"the attempt loop is VCL: return(retry) with the backend chosen from bereq.retries; the maxAttemptsTimeout deadline is now - bereq.time",
			"TLS and h2 origins cannot be reached: their routes answer 502 with X-Edgeconform-Limit",
		},
	}
	s.Limits = limits
	return s, nil
}

// Command is varnishd in the foreground on listen with the VCL at vcl and
// its working directory (shared memory log, compiled VCL) workDir.
func Command(binary, workDir, listen, vcl string) []string {
	if binary == "" {
		binary = "varnishd"
	}
	return []string{binary, "-F", "-j", "none", "-n", workDir, "-a", listen, "-T", "none", "-f", vcl,
		"-s", "malloc,256m",
		"-p", "max_retries=3", // ATT-4: at most 4 attempts
		"-p", "default_grace=0s", "-p", "default_keep=0s",
		// CCH-6: Accept-Encoding reaches the origin and Vary on it joins
		// the key (no gzip normalisation by Varnish).
		"-p", "http_gzip_support=off",
		"-p", "thread_pools=1", "-p", "thread_pool_min=20", "-p", "thread_pool_max=500",
		"-p", "vcc_allow_inline_c=off",
		// Without optimisation the C compiler builds the VCL in a third
		// of the time.
		"-p", "cc_command=exec gcc -std=gnu99 -O0 -pthread -fpic -shared -Wl,-x -o %o %s",
	}
}
