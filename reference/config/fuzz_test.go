package config

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// FuzzLoad checks that Load never panics, that its errors are always
// field errors with a field and a problem, and that a configuration it
// accepts validates again cleanly, also after a round trip through JSON.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(exampleYAML), false)
	f.Add([]byte(fullYAML), false)
	f.Add([]byte(exampleJSON), false)
	f.Add([]byte("---\n"+exampleYAML+"---\nservice: {}\n"), false)
	f.Add([]byte(fullYAML), true)
	f.Add([]byte(mutate(f, exampleYAML, "connectTimeout: 2s", "connectTimeout: 0.2s")), true)
	for _, tc := range badConfigs() {
		f.Add([]byte(mutate(f, fullYAML, tc.old, tc.new)), false)
	}
	f.Add([]byte(`{"origins":[{"name":"a","originAddress":"a.test","failoverOrigin":"a"}]}`), false)
	f.Add([]byte("origins: [null, {}]\nservice: {routing: {hostRules: [null], pathMatchers: [{routeRules: [{}]}]}}"), false)
	f.Add([]byte("a: &x [*x]"), false)

	f.Fuzz(func(t *testing.T, data []byte, lab bool) {
		// The path-finding walk must catch everything the decoder rejects
		// (it is stricter: field names must match in case too).
		if j, err := yaml.YAMLToJSONStrict(data); err == nil && len(fielderr.CheckJSON(j, reflect.TypeFor[Config](), "", docField)) == 0 {
			dec := json.NewDecoder(bytes.NewReader(j))
			dec.DisallowUnknownFields()
			var c Config
			if err := dec.Decode(&c); err != nil {
				t.Fatalf("CheckJSON found nothing in %s, but decoding fails: %v", j, err)
			}
		}

		opts := Options{Lab: lab}
		c, err := Load(data, opts)
		if err != nil {
			if c != nil {
				t.Fatalf("Load returned a config and the error %v", err)
			}
			es, ok := fielderr.As(err)
			if !ok || len(es) == 0 {
				t.Fatalf("error %v (%T) is not a non-empty fielderr.Errors", err, err)
			}
			for _, e := range es {
				if e.Field == "" || e.Problem == "" {
					t.Fatalf("field error without a field or a problem: %#v", e)
				}
			}
			return
		}
		if err := c.Validate(opts); err != nil {
			t.Fatalf("loaded config does not re-validate: %v", err)
		}
		for _, o := range c.Origins {
			e := c.Effective(o)
			if e.Port < 1 || e.Port > 65535 || e.MaxAttempts < 1 || e.MaxAttempts > 4 || e.ConnectTimeout <= 0 ||
				e.ReadTimeout > e.ResponseTimeout && o.Timeout != nil && o.Timeout.ReadTimeout != nil {
				t.Fatalf("valid origin %q has effective settings out of bounds: %+v", o.Name, e)
			}
		}
		j, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		c2, err := Load(j, opts)
		if err != nil {
			t.Fatalf("a valid config does not reload from its JSON %s: %v", j, err)
		}
		if j2, _ := json.Marshal(c2); string(j2) != string(j) {
			t.Fatalf("JSON round trip changed the config:\n%s\n%s", j, j2)
		}
	})
}
