package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/internal/fielderr"
	"github.com/edgeconform/edgeconform/reference/secrets"
)

// BKT-1: secretAccessKeyVersion is resolved at load time when a store is
// given; a missing secret is a problem naming the origin and the files.
func TestResolveSecrets(t *testing.T) {
	dir := t.TempDir()
	t.Run("found", func(t *testing.T) {
		if err := os.MkdirAll(filepath.Join(dir, "s"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "s", "1"), []byte("the-secret\n"), 0o600)
		c := mustLoad(t, fullYAML, Options{Secrets: secrets.Dir(dir)})
		s3, _ := c.Origin("s3")
		if e := c.Effective(s3); e.AWSV4Secret != "the-secret" {
			t.Errorf("AWSV4Secret = %q", e.AWSV4Secret)
		}
		p, _ := c.Origin("primary")
		if e := c.Effective(p); e.AWSV4Secret != "" {
			t.Errorf("primary got a secret")
		}
	})
	t.Run("missing", func(t *testing.T) {
		empty := t.TempDir()
		_, err := Load([]byte(fullYAML), Options{Secrets: secrets.Dir(empty)})
		es, ok := fielderr.As(err)
		if !ok || len(es) != 1 {
			t.Fatalf("error %v, want one field error", err)
		}
		msg := es[0].Error()
		for _, want := range []string{"origins[3].awsV4Authentication.secretAccessKeyVersion", `origin "s3"`,
			filepath.Join(empty, "s", "1"), filepath.Join(empty, "s")} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not name %q", msg, want)
			}
		}
	})
	t.Run("not resolved without a store", func(t *testing.T) {
		c := mustLoad(t, fullYAML, Options{})
		s3, _ := c.Origin("s3")
		if e := c.Effective(s3); e.AWSV4Secret != "" || e.AWSV4 == nil {
			t.Errorf("Effective(s3) = %+v", e)
		}
	})
}
