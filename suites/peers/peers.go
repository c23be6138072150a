// Package peers runs the conformance suites against real third-party edge
// caches (nginx, Varnish, HAProxy, Squid, Caddy, Apache Traffic Server,
// Apache httpd): each peer is a small generator, in its own package
// suites/peers/<peer>, that turns the neutral topology (topology.Neutral,
// topology.json) into the peer's own configuration and says how to run it
// in the foreground on loopback, against the emulators the topology names.
//
// What a peer cannot express it declares as a Limit, with a pointer into
// its documentation: its specs still run and their results are recorded,
// annotated with the limit, so a reader tells "configured but behaves
// differently" apart from "the peer has no such setting".
//
// The interface is stable: changes are additive (new optional fields, new
// optional interfaces a peer may implement).
package peers

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/suites/catalog"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Peer is one third-party implementation.
type Peer interface {
	// Name is the peer's short name ("nginx"): the PEERS= value, the
	// column of the report, the expectations file's name.
	Name() string
	// Package is the Debian package providing it ("nginx").
	Package() string
	// Binaries are the executables looked for (names on PATH or absolute
	// paths), first found wins ("nginx", "/usr/sbin/nginx").
	Binaries() []string
	// Generate writes the peer's configuration for topo into env.Dir
	// (and nowhere else) and returns how to run it in the foreground on
	// env.Listen, against the emulators at topo's addresses.
	Generate(topo *topology.Neutral, env Env) (*Setup, error)
}

// Env is what the runner gives a generator.
type Env struct {
	// Dir is an empty temporary directory the peer owns: its
	// configuration, cache, pid and log files go there, nothing else
	// anywhere.
	Dir string
	// Listen is the client-facing address, "127.0.0.1:PORT" (HTTP/1.1).
	Listen string
	// Binary is the peer's executable found (one of Binaries()).
	Binary string
	// Profile is the timing profile's name ("strict" or "lab"); the same
	// as topo.Profile.Name.
	Profile string
	// OriginCA is a PEM file with the CA that signed the emulators' TLS
	// certificates (the https, h2 listeners): trust it for origins,
	// beside the system roots. The expired, wrongname and untrusted
	// listeners must still be refused (PRT-4).
	OriginCA string
	// Resolve maps a host name the topology uses as an origin address to
	// the IP to connect to (empty when every address is an IP); the Host
	// and SNI sent stay the name.
	Resolve map[string]string
}

// Path is name inside env.Dir.
func (e Env) Path(name string) string { return filepath.Join(e.Dir, name) }

// Setup is how to run a generated peer.
type Setup struct {
	// Command runs the peer in the foreground (argv; Command[0] is
	// usually env.Binary). It must stay in the foreground, log to its
	// files in env.Dir or to stdout/stderr (the runner keeps both), and
	// stop on SIGTERM.
	Command []string
	// Environ is added to the runner's environment for Command
	// ("NAME=value").
	Environ []string
	// Health is the path (on Listen) or the full URL the runner polls
	// until it answers with any HTTP status before running the specs.
	Health string
	// Limits are what the peer cannot express, per rule and scenario.
	Limits []Limit
	// Logs, if set, is where the peer writes per-request records the LOG
	// specs read (LOG-1, LOG-2); nil: the LOG specs skip.
	Logs *LogSource
	// Notes are short remarks for the report (how a setting was mapped).
	Notes []string
	// Startup, if set, is how long the peer may take to answer its
	// health check (default 30 s): varnishd compiles its VCL to C first.
	Startup time.Duration
}

// Limit is a setting the peer has no equivalent for.
type Limit struct {
	// Rule is the rule ID (behaviour.md, "ATT-4") whose specs the limit
	// affects.
	Rule string `json:"rule"`
	// Scenario is the topology scenario it concerns ("" for all).
	Scenario string `json:"scenario,omitempty"`
	// Reason names what the peer lacks ("no total deadline across
	// attempts: proxy_next_upstream_timeout counts only between tries").
	Reason string `json:"reason"`
	// Doc is a URL into the peer's manual supporting the reason.
	Doc string `json:"doc"`
}

// LogSource is a file of per-request records the peer writes: JSON Lines,
// one object per record, with "msg" naming the record ("client request"
// or "origin attempt", the reference's) and the fields the LOG specs read
// under the reference's names where the peer has them ("uri",
// "request_id", "status", "origin", "origin_ip", "cache_status",
// "backend_latency_ms", "range", "proxy_status", "attempt").
type LogSource struct {
	// Path is the file, inside env.Dir.
	Path string `json:"path"`
	// Fields lists the record fields the peer fills, for the report.
	Fields []string `json:"fields,omitempty"`
}

// Record messages of a LogSource.
const (
	ClientRecord  = "client request"
	AttemptRecord = "origin attempt"
)

// ProfileChooser is optional: a peer whose timers cannot fit the strict
// profile's wall time, and whose timers accept sub-second values, runs
// in the lab profile instead and says why.
type ProfileChooser interface {
	// Profile returns the profile the peer runs in and the reason.
	Profile() (name, reason string)
}

// Check reports what is wrong with a Setup generated for topo in env: no
// command, a health check that is neither a path nor a URL, limits that
// name no rule of the catalog or no scenario of topo, give no reason or
// no documentation URL, a log file outside env.Dir. Generators' tests
// call it; so does the runner.
func (s *Setup) Check(topo *topology.Neutral, env Env) error {
	var problems []string
	if len(s.Command) == 0 || s.Command[0] == "" {
		problems = append(problems, "no command")
	}
	if !strings.HasPrefix(s.Health, "/") {
		if u, err := url.Parse(s.Health); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problems = append(problems, fmt.Sprintf("health %q: want a path on the listen address or an http(s) URL", s.Health))
		}
	}
	for _, kv := range s.Environ {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			problems = append(problems, fmt.Sprintf("environ %q: want NAME=value", kv))
		}
	}
	for i, l := range s.Limits {
		p := fmt.Sprintf("limits[%d] (%s %s)", i, l.Rule, l.Scenario)
		if _, ok := catalog.Lookup(l.Rule); !ok {
			problems = append(problems, p+": rule is not in the catalog")
		}
		if l.Scenario != "" {
			if _, ok := topo.Scenario(l.Scenario); !ok {
				problems = append(problems, p+": scenario is not in the topology")
			}
		}
		if strings.TrimSpace(l.Reason) == "" {
			problems = append(problems, p+": no reason")
		}
		if u, err := url.Parse(l.Doc); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problems = append(problems, p+fmt.Sprintf(": doc %q is not a URL into the peer's documentation", l.Doc))
		}
	}
	if s.Logs != nil {
		if rel, err := filepath.Rel(env.Dir, s.Logs.Path); err != nil || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
			problems = append(problems, fmt.Sprintf("logs %q: not inside the peer's directory %s", s.Logs.Path, env.Dir))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("setup: %s", strings.Join(problems, "; "))
	}
	return nil
}

// LimitsFor returns the limits declared for rule (in any scenario, or in
// scenario when it is not "").
func (s *Setup) LimitsFor(rule, scenario string) []Limit {
	var out []Limit
	for _, l := range s.Limits {
		if l.Rule == rule && (scenario == "" || l.Scenario == "" || l.Scenario == scenario) {
			out = append(out, l)
		}
	}
	return out
}
