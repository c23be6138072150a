package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"

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

// Load parses data (YAML or JSON) strictly into a Config and validates it.
// Every problem is reported at once, as fielderr.Errors, each named by its
// field path ("origins[0].timeout.connectTimeout"). When the document
// cannot be decoded (bad syntax, an unknown field, a value of the wrong
// type) only those problems are reported: validating a half-read
// configuration would add misleading ones.
func Load(data []byte, opts Options) (*Config, error) {
	// YAMLToJSONStrict also rejects duplicate keys. JSON is YAML, so JSON
	// input goes through the same path.
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fielderr.Errors{{Field: docField, Problem: "not valid YAML or JSON: " + cleanYAMLError(err)}}
	}
	if line, ok := secondDocument(data); ok {
		return nil, fielderr.Errors{{Field: docField, Problem: fmt.Sprintf("holds more than one YAML document (another starts at line %d): one file is one configuration", line)}}
	}
	if es := fielderr.CheckJSON(j, reflect.TypeFor[Config](), "", docField); len(es) > 0 {
		return nil, es
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		// CheckJSON found nothing, so this should not happen; report
		// it rather than lose it.
		return nil, fielderr.Errors{{Field: docField, Problem: err.Error()}}
	}
	if err := c.Validate(opts); err != nil {
		return nil, err
	}
	if opts.Secrets != nil {
		if err := c.ResolveSecrets(opts.Secrets); err != nil {
			return nil, err
		}
	}
	return &c, nil
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
