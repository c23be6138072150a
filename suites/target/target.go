// Package target is the system under test as the conformance suites see
// it: a client-facing URL, the control API of the emulators it reaches,
// the topology parameters it was configured with, and, when it exposes
// them, its log records.
//
// Two kinds: "reference" starts emulators and the reference edge cache in
// this process, configured with the generated topology (nothing to set up);
// "external" is a URL of any implementation plus the control URL of the
// emulators it reaches, deployed with the same topology beforehand.
package target

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/emuclient"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Environment variables the suites read (flags of the test binary
// override them).
const (
	EnvTarget     = "EDGECONFORM_TARGET"      // "reference" (default) or the client-facing URL
	EnvControl    = "EDGECONFORM_CONTROL"     // emulator control API URL (external targets)
	EnvProfile    = "EDGECONFORM_PROFILE"     // lab (default) or strict
	EnvTopology   = "EDGECONFORM_TOPOLOGY"    // topology.json written by conformance-topology (external)
	EnvClientHost = "EDGECONFORM_CLIENT_HOST" // Host clients send (external; default: the URL's host)
	EnvOriginHost = "EDGECONFORM_ORIGIN_HOST" // originAddress of the emulators (external, without EDGECONFORM_TOPOLOGY)
	EnvEXT        = "EDGECONFORM_EXT"         // 1: run EXT specs against external targets too
	EnvResults    = "EDGECONFORM_RESULTS"     // where to write the results file
	EnvName       = "EDGECONFORM_NAME"        // implementation name in reports
	// EnvReferenceImpl says an external target is the reference
	// (edgecache in a container, say): EXT specs run and known reference
	// bugs are skipped, as for the in-process reference.
	EnvReferenceImpl = "EDGECONFORM_REFERENCE_IMPL"
	// EnvEdges lists edge node URLs (comma-separated) whose cache fills go
	// through one shield tier in front of the origins (SHD-1); without it,
	// an external target's SHD specs are skipped.
	EnvEdges = "EDGECONFORM_EDGES"
)

// Settings select and describe the target.
type Settings struct {
	Target     string // "reference" or a URL
	Control    string
	Profile    string
	Topology   string
	ClientHost string
	OriginHost string
	EXT        bool
	Results    string
	Name       string
	// ReferenceImpl: the external target is the reference.
	ReferenceImpl bool
	// Edges are edge node URLs sharing one shield (external targets).
	Edges []string
	// Logs is a JSON Lines file of the external target's log records
	// (EnvLogs); "" when it exposes none.
	Logs string
}

// SettingsFromEnv reads the EDGECONFORM_* variables.
func SettingsFromEnv() Settings {
	ext, _ := strconv.ParseBool(os.Getenv(EnvEXT))
	refImpl, _ := strconv.ParseBool(os.Getenv(EnvReferenceImpl))
	s := Settings{
		Target: os.Getenv(EnvTarget), Control: os.Getenv(EnvControl), Profile: os.Getenv(EnvProfile),
		Topology: os.Getenv(EnvTopology), ClientHost: os.Getenv(EnvClientHost), OriginHost: os.Getenv(EnvOriginHost),
		EXT: ext, Results: os.Getenv(EnvResults), Name: os.Getenv(EnvName), ReferenceImpl: refImpl,
		Logs: os.Getenv(EnvLogs),
	}
	if s.Target == "" {
		s.Target = "reference"
	}
	s.Edges = SplitURLs(os.Getenv(EnvEdges))
	return s
}

// SplitURLs splits a comma-separated list of URLs, dropping empty items
// and trailing slashes.
func SplitURLs(list string) []string {
	var out []string
	for _, u := range strings.Split(list, ",") {
		if u = strings.TrimSuffix(strings.TrimSpace(u), "/"); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// IsReference reports whether the settings select the in-process reference.
func (s Settings) IsReference() bool { return s.Target == "" || s.Target == "reference" }

// Record is one structured log record of the target (slog JSON: "msg",
// "level", "time" and the attributes).
type Record map[string]any

// Logs gives access to the target's log records.
type Logs interface {
	// Records returns the records so far whose message is msg ("" for all).
	Records(msg string) []Record
}

// Target is a running system under test.
type Target struct {
	// Name is the implementation's name in reports.
	Name string
	// Reference is true for the in-process reference.
	Reference bool
	// URL is the client-facing base URL (scheme://host:port).
	URL string
	// Edges are the client-facing URLs of edge nodes whose fills go
	// through one shield (the in-process reference: URL's node is that
	// shield); none when the target has no tiers to test (SHD).
	Edges []string
	// Control is the emulators' control API client.
	Control *emuclient.Client
	// ControlURL is its base URL.
	ControlURL string
	// Params are the topology parameters the target was configured with.
	Params topology.Params
	// Logs is nil when the target exposes no logs to the suites.
	Logs Logs
	// Config is the generated configuration (reference only), YAML.
	Config []byte

	close func()
}

// Close stops what Start started.
func (t *Target) Close() {
	if t.close != nil {
		t.close()
	}
}

// Start starts (reference) or connects to (external) the target.
func Start(ctx context.Context, s Settings) (*Target, error) {
	prof, err := topology.ProfileByName(s.Profile)
	if err != nil {
		return nil, err
	}
	if s.IsReference() {
		return startReference(ctx, prof, s)
	}
	return connectExternal(ctx, prof, s)
}

// connectExternal checks the control API and works out the topology
// parameters of an external target.
func connectExternal(ctx context.Context, prof topology.Profile, s Settings) (*Target, error) {
	u, err := url.Parse(s.Target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s=%q: want \"reference\" or an http(s) URL", EnvTarget, s.Target)
	}
	if s.Control == "" {
		return nil, fmt.Errorf("an external target needs the emulators' control URL (%s)", EnvControl)
	}
	c := emuclient.New(s.Control)
	if err := c.Health(ctx); err != nil {
		return nil, fmt.Errorf("emulator control API at %s: %w", s.Control, err)
	}
	var p topology.Params
	if s.Topology != "" {
		if p, err = topology.ReadParams(s.Topology); err != nil {
			return nil, err
		}
		if p.Profile.Name != prof.Name {
			return nil, fmt.Errorf("%s was generated for the %s profile, the suites run %s", s.Topology, p.Profile.Name, prof.Name)
		}
	} else {
		if s.OriginHost == "" {
			return nil, fmt.Errorf("an external target needs %s (the parameters the topology was generated with) or %s", EnvTopology, EnvOriginHost)
		}
		p = topology.Params{Profile: prof, OriginHost: s.OriginHost, AltHost: s.OriginHost,
			RouteRewriteHost: s.OriginHost, OriginRewriteHost: s.OriginHost}
		if p.Ports, err = ListenerPorts(ctx, c); err != nil {
			return nil, err
		}
	}
	// A topology generated with -format reference has the reference's own
	// settings; an external target that is not the reference does not, so
	// the scenarios that need them are not available (skipped, not failed).
	if !s.ReferenceImpl {
		p.Reference = false
	}
	if s.ClientHost != "" {
		p.ClientHost = s.ClientHost
	}
	if p.ClientHost == "" {
		p.ClientHost = u.Hostname()
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	name := s.Name
	if name == "" {
		name = u.Host
	}
	for _, e := range s.Edges {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%s: %q is not an http(s) URL", EnvEdges, e)
		}
	}
	t := &Target{Name: name, URL: strings.TrimSuffix(s.Target, "/"), Edges: s.Edges, Control: c, ControlURL: s.Control, Params: p}
	if s.Logs != "" {
		t.Logs = &fileLogs{path: s.Logs}
	}
	return t, nil
}

// ListenerPorts asks the emulators which port each topology listener has.
func ListenerPorts(ctx context.Context, c *emuclient.Client) (map[string]int, error) {
	ls, err := c.Listeners(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the emulator's listeners: %w", err)
	}
	ports := map[string]int{}
	for _, l := range ls {
		_, port, err := net.SplitHostPort(l.Addr)
		if err != nil {
			continue
		}
		n, _ := strconv.Atoi(port)
		ports[l.Name] = n
	}
	var missing []string
	for _, l := range topology.Listeners() {
		if l.DefaultPort == 0 && ports[l.Name] == 0 {
			missing = append(missing, fmt.Sprintf("%s (%s)", l.Name, l.Profile))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the emulator lacks listeners the topology needs: %s", strings.Join(missing, ", "))
	}
	return ports, nil
}
