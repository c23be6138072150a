package s3emu

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
)

const (
	testAKID   = "AKIDEXAMPLE0000001"
	testSecret = "s3emu/secret+key/EXAMPLE0000000000000000"
	testRegion = "eu-west-3"
)

// startS3 serves cfg behind an originemu listener and returns the emulator
// and the listener's URL.
func startS3(t testing.TB, cfg Config) (*Server, *originemu.Emulator, string) {
	t.Helper()
	if cfg.Credentials == nil {
		cfg.Credentials = map[string]string{testAKID: testSecret}
	}
	if cfg.Region == "" {
		cfg.Region = testRegion
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e, err := originemu.Start(context.Background(), originemu.Config{
		Logger:    slog.New(slog.DiscardHandler),
		Listeners: []originemu.ListenerConfig{{Name: "s3", Profile: originemu.HTTP, Backend: srv}},
	})
	if err != nil {
		t.Fatalf("starting emulator: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return srv, e, e.URL("s3")
}

// notes waits until at least n requests, and every request journaled so
// far, have ended and returns their journal notes.
func notes(t testing.TB, e *originemu.Emulator, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q := journal.Query{Listener: "s3"}
	n = max(n, len(e.Journal().Query(q).Requests))
	reqs, err := e.Journal().WaitEnded(ctx, q, n)
	if err != nil {
		t.Fatalf("waiting for %d journal records: %v", n, err)
	}
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Method + " " + r.URI + " => " + r.Note
	}
	return out
}

// countNotes counts notes containing s.
func countNotes(ns []string, s string) int {
	c := 0
	for _, n := range ns {
		if strings.Contains(n, s) {
			c++
		}
	}
	return c
}

func journalPuts() journal.Query { return journal.Query{Listener: "s3", Method: "PUT"} }

// content reads an object's stored bytes (nil if absent).
func content(t testing.TB, srv *Server, bucket, key string) []byte {
	t.Helper()
	o, body, _, err := srv.store.open(bucket, key)
	if err != nil {
		t.Fatalf("opening %s/%s: %v", bucket, key, err)
	}
	if o == nil {
		return nil
	}
	defer body.Close()
	data, err := io.ReadAll(body)
	if err != nil {
		t.Fatalf("reading %s/%s: %v", bucket, key, err)
	}
	return data
}
