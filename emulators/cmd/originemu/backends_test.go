package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
)

// The bucket fixture starts an S3 and a GCS listener that answer as bucket
// services (anonymous reads here; the SDK tests live in s3emu and gcsemu).
func TestBucketFixture(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "fixtures", "originemu-buckets.yaml")
	s, err := parseArgs([]string{"--config", path}, io.Discard)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	for i := range s.cfg.Listeners {
		s.cfg.Listeners[i].Addr = "127.0.0.1:0"
		if s.cfg.Listeners[i].Backend == nil {
			t.Fatalf("listener %s has no backend", s.cfg.Listeners[i].Name)
		}
	}
	e, err := originemu.Start(context.Background(), s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, tc := range []struct {
		listener, host, path string
		status               int
		body                 string
	}{
		{"s3", "public.s3.eu-west-1.example", "/hello.txt", 200, "hello from s3emu\n"},
		{"s3", "", "/public/hello.txt", 200, "hello from s3emu\n"},
		{"s3", "", "/media/live/seg1.ts", 403, ""},
		{"gcs", "", "/open/hello.txt", 200, "hello from gcsemu\n"},
		{"gcs", "open.storage.googleapis.com", "/hello.txt", 200, "hello from gcsemu\n"},
		{"gcs", "", "/vod/movie/seg1.ts", 0, ""}, // private: refused (401 or 403)
	} {
		req, _ := http.NewRequest("GET", e.URL(tc.listener)+tc.path, nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case tc.status == 0 && resp.StatusCode != 401 && resp.StatusCode != 403:
			t.Errorf("%s %s: %d, want 401 or 403", tc.listener, tc.path, resp.StatusCode)
		case tc.status != 0 && resp.StatusCode != tc.status:
			t.Errorf("%s %s: %d, want %d: %s", tc.listener, tc.path, resp.StatusCode, tc.status, body)
		case tc.body != "" && string(body) != tc.body:
			t.Errorf("%s %s: body %q", tc.listener, tc.path, body)
		}
	}
	// The backends' verdicts are in the journal.
	notes := ""
	for _, r := range e.Journal().Query(journal.Query{}).Requests {
		notes += r.Note + "\n"
	}
	if !strings.Contains(notes, "anonymous") {
		t.Errorf("journal notes lack the backends' verdicts:\n%s", notes)
	}
}

func TestBackendConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []string
	}{
		{"listeners: [{name: a, profile: http}]\nbackends: {b: {s3: {}}}", []string{`backends["b"]`, "no listener"}},
		{"listeners: [{name: a, profile: http}]\nbackends: {a: {}}", []string{`backends["a"]`, "exactly one"}},
		{"listeners: [{name: a, profile: http}]\nbackends: {a: {s3: {buckets: [{name: \"Bad Name\"}]}}}", []string{`backends["a"].s3.buckets[0].name`}},
		{"listeners: [{name: a, profile: http}]\nbackends: {a: {gcs: {bukets: []}}}", []string{`bukets`}},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		os.WriteFile(path, []byte(tc.yaml), 0o644)
		_, err := parseArgs([]string{"--config", path}, io.Discard)
		if err == nil {
			t.Errorf("%q accepted", tc.yaml)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", tc.yaml, err, w)
			}
		}
	}
}
