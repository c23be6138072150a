package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/edgeconform/edgeconform/internal/fielderr"
	"github.com/edgeconform/edgeconform/reference/secrets"
)

// Options control validation.
type Options struct {
	// Lab relaxes the lower bounds of the origin timeouts to "> 0" so that
	// suites can run fast against the reference with sub-second timeouts.
	// Upper bounds, and readTimeout <= responseTimeout, still hold.
	Lab bool
	// Secrets, if set, resolves every awsV4Authentication's
	// secretAccessKeyVersion after validation (BKT-1): a secret it does not
	// have is a problem at that field, naming the origin and what was
	// looked for. nil skips the resolution (validation only).
	Secrets secrets.Store

	// Bounds the API reference leaves open (EXT); 0 means the default.
	// MaxFailoverChain bounds the origins in one failover chain, the
	// primary included (default DefaultMaxFailoverChain: Media CDN makes
	// at most 4 attempts across all origins, ATT-2, so a fifth origin could
	// never be tried). MaxHosts bounds the hosts of all host rules together
	// and MaxRouteRules the route rules of all path matchers together
	// (defaults DefaultMaxHosts, DefaultMaxRouteRules; 200 route rules per
	// path matcher is the API's own bound and holds regardless).
	MaxFailoverChain int
	MaxHosts         int
	MaxRouteRules    int

	// AllowUnimplemented accepts Media CDN fields the reference does not
	// implement (NotImplementedFields), listing them in
	// Config.Unimplemented instead of refusing the configuration.
	AllowUnimplemented bool
}

// The defaults of Options' bounds.
const (
	DefaultMaxFailoverChain = maxMaxAttempts
	DefaultMaxHosts         = 1000
	DefaultMaxRouteRules    = 2000
)

// bound is v, or def when v is 0.
func bound(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// docField names the whole document in errors that belong to no field.
const docField = "config"

// Load parses data (YAML or JSON: a combined configuration, or one exported
// resource) strictly into a Config and validates it. Every problem is
// reported at once, as fielderr.Errors, each named by its field path
// ("origins[0].timeout.connectTimeout"). When the document cannot be
// decoded (bad syntax, an unknown field, a value of the wrong type) only
// those problems are reported: validating a half-read configuration would
// add misleading ones.
func Load(data []byte, opts Options) (*Config, error) {
	doc, err := parseDoc(data)
	if err != nil {
		return nil, fielderr.Errors{{Field: docField, Problem: err.Error()}}
	}
	return loadSources([]source{{doc: doc}}, opts)
}

// LoadFile reads the file at path and Loads it. Problems with the contents
// are fielderr.Errors (wrapped with the file name; use fielderr.As).
func LoadFile(path string, opts Options) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Load(data, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// LoadFiles reads a configuration from several files: each path is a file
// or a directory (its *.yaml, *.yml and *.json files, in name order). A
// file is a combined configuration (origins:, service:, reference:) or one
// resource as `gcloud edge-cache origins export` or `services export`
// writes it: full resource names (projects/P/locations/global/...) in name,
// origin and failoverOrigin, output-only fields (createTime, updateTime),
// int64s as strings. Together the files hold exactly one EdgeCacheService.
// A problem in a resource file is named "FILE: field".
func LoadFiles(paths []string, opts Options) (*Config, error) {
	files, err := expandPaths(paths)
	if err != nil {
		return nil, err
	}
	if len(files) == 1 {
		return LoadFile(files[0], opts)
	}
	var l fielderr.List
	srcs := make([]source, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		doc, err := parseDoc(data)
		if err != nil {
			l.Add(f, "%v", err)
			continue
		}
		srcs = append(srcs, source{file: f, doc: doc})
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	return loadSources(srcs, opts)
}

// loadSources assembles, decodes strictly and validates.
func loadSources(srcs []source, opts Options) (*Config, error) {
	a := assemble(srcs)
	if _, ok := a.doc["service"]; !ok && !a.combined {
		// Only resource files: say what is missing rather than report
		// every required field of an absent service.
		a.problems.Add(docField, "no EdgeCacheService: give its file too (gcloud edge-cache services export)")
		return nil, a.problems.Errs
	}
	pre := a.problems.Errs
	if !opts.AllowUnimplemented {
		for _, u := range a.strip.found {
			pre = append(pre, fielderr.FieldError{Field: u.Field, Problem: u.Message() + "; start with --allow-unimplemented to run without it"})
		}
	}
	j, err := json.Marshal(a.doc)
	if err != nil {
		return nil, fielderr.Errors{{Field: docField, Problem: err.Error()}}
	}
	if es := fielderr.CheckJSON(j, reflect.TypeFor[Config](), "", docField); len(es) > 0 {
		return nil, append(pre, a.localize(es)...)
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		// CheckJSON found nothing, so this should not happen; report
		// it rather than lose it.
		return nil, append(pre, fielderr.FieldError{Field: docField, Problem: err.Error()})
	}
	if err := c.Validate(opts); err != nil {
		es, _ := fielderr.As(err)
		return nil, append(pre, a.localize(es)...)
	}
	if len(pre) > 0 {
		return nil, pre
	}
	if opts.Secrets != nil {
		if err := c.ResolveSecrets(opts.Secrets); err != nil {
			es, _ := fielderr.As(err)
			return nil, a.localize(es)
		}
	}
	c.unimplemented = a.strip.found
	return &c, nil
}

// Unimplemented lists the not-implemented Media CDN fields the
// configuration set (loaded with Options.AllowUnimplemented; without it
// they are errors).
func (c *Config) Unimplemented() []Unimplemented { return c.unimplemented }

func cleanYAMLError(err error) string {
	s := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	if strings.Contains(s, "json: unsupported value") {
		return "a number is infinite or not a number (.inf, .nan), which JSON cannot hold"
	}
	return strings.Join(strings.Fields(s), " ")
}

// secondDocument finds a YAML document that follows the first one (the
// YAML parser reads only the first and would silently drop the rest): a
// "---" or "..." marker at the start of a line, after content, followed
// by more content. It returns the marker's line number.
func secondDocument(data []byte) (line int, ok bool) {
	seenContent, marker := false, 0
	for i, ln := range strings.Split(string(data), "\n") {
		ln = strings.TrimRight(ln, "\r")
		t := strings.TrimSpace(ln)
		if (strings.HasPrefix(ln, "---") || strings.HasPrefix(ln, "...")) && (len(ln) == 3 || ln[3] == ' ' || ln[3] == '\t') {
			if seenContent && marker == 0 {
				marker = i + 1
			}
			t = strings.TrimSpace(ln[3:]) // "--- {a: 1}" starts with content
		}
		if t == "" || t[0] == '#' || !seenContent && t[0] == '%' {
			continue
		}
		if marker != 0 {
			return marker, true
		}
		seenContent = true
	}
	return 0, false
}

// ResolveSecrets looks up the secret of every origin with
// awsV4Authentication in store and keeps it for Effective
// (EffectiveOrigin.AWSV4Secret). Every secret store does not have is
// reported, as fielderr.Errors at
// origins[i].awsV4Authentication.secretAccessKeyVersion.
func (c *Config) ResolveSecrets(store secrets.Store) error {
	var l fielderr.List
	found := map[string]string{}
	for i, o := range c.Origins {
		a := o.AWSV4Authentication
		if a == nil {
			continue
		}
		s, err := store.Secret(a.SecretAccessKeyVersion)
		if err != nil {
			l.Add(fmt.Sprintf("origins[%d].awsV4Authentication.secretAccessKeyVersion", i),
				"origin %q: %v", o.Name, err)
			continue
		}
		found[o.Name] = s
	}
	if err := l.Err(); err != nil {
		return err
	}
	c.secrets = found
	return nil
}
