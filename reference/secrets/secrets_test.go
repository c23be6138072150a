package secrets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "s3-secret"), "  any-version\n")
	write(t, filepath.Join(dir, "versioned", "2"), "v2\n")
	write(t, filepath.Join(dir, "s3-secret-v", "1"), "v1")
	write(t, filepath.Join(dir, "empty"), " \n")
	s := Dir(dir)
	for _, tc := range []struct{ version, want string }{
		{"projects/p/secrets/s3-secret/versions/1", "any-version"},
		{"projects/p/secrets/s3-secret/versions/latest", "any-version"},
		{"projects/p/secrets/s3-secret", "any-version"},
		{"s3-secret", "any-version"},
		{"projects/p/secrets/versioned/versions/2", "v2"},
		{"projects/p/secrets/s3-secret-v/versions/1", "v1"},
	} {
		got, err := s.Secret(tc.version)
		if err != nil || got != tc.want {
			t.Errorf("Secret(%q) = %q, %v; want %q", tc.version, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ version, wantErr string }{
		{"projects/p/secrets/missing/versions/1", filepath.Join(dir, "missing", "1") + " or " + filepath.Join(dir, "missing")},
		{"projects/p/secrets/versioned/versions/3", filepath.Join(dir, "versioned", "3")},
		{"projects/p/secrets/empty/versions/1", "is empty"},
		{"projects/p/secrets/../versions/1", "bad name"},
		{"projects/p/keys/x", "want projects/PROJECT/secrets/NAME/versions/VERSION"},
		{"", "want projects"},
	} {
		_, err := s.Secret(tc.version)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Secret(%q) error %v, want one containing %q", tc.version, err, tc.wantErr)
		}
	}
	if _, err := s.Secret("projects/p/secrets/missing/versions/1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing secret error %v is not ErrNotFound", err)
	}
	if _, err := None.Secret("x"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "--secrets") {
		t.Errorf("None: %v", err)
	}
}

func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "token")
	if _, err := NewFile(path); err == nil {
		t.Fatal("missing file accepted")
	}
	write(t, path, "")
	if _, err := NewFile(path); err == nil {
		t.Fatal("empty file accepted")
	}
	write(t, path, "tok-1\n")
	f, err := NewFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := f.Value(); v != "tok-1" || err != nil {
		t.Fatalf("%q %v", v, err)
	}
	write(t, path, "tok-22\n")
	os.Chtimes(path, time.Now(), time.Now().Add(time.Second))
	if v, _ := f.Value(); v != "tok-22" {
		t.Fatalf("not re-read: %q", v)
	}
	os.Remove(path)
	if v, err := f.Value(); v != "tok-22" || err != nil {
		t.Fatalf("removed file: %q %v, want the last value", v, err)
	}
}
