package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The committed apifields.txt is what the installed Google Cloud SDK's
// schemas give (skipped where the SDK is not installed).
func TestGeneratedFileIsCurrent(t *testing.T) {
	if _, err := os.Stat(filepath.Join(DefaultSDK, "lib/googlecloudsdk/schemas/networkservices/v1/EdgeCacheOrigin.yaml")); err != nil {
		t.Skipf("no Google Cloud SDK at %s: %v", DefaultSDK, err)
	}
	var b bytes.Buffer
	if err := run(DefaultSDK, &b); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../apifields.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("reference/config/apifields.txt differs from what the SDK's schemas give: run go generate ./reference/config")
	}
}

// A missing SDK is an error naming what was looked for.
func TestNoSDK(t *testing.T) {
	var b bytes.Buffer
	if err := run(t.TempDir(), &b); err == nil {
		t.Fatal("no error without an SDK")
	}
}
