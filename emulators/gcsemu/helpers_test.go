package gcsemu

import (
	"context"
	"log/slog"
	"net/http"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/originemu"
)

const (
	goodToken  = "good-token"
	pubBucket  = "pub-bucket"
	privBucket = "priv-bucket"
)

func testConfig() Config {
	return Config{
		Tokens: []string{goodToken},
		Buckets: []BucketConfig{
			{Name: pubBucket, Public: true, Objects: []ObjectConfig{
				{Name: "hello.txt", Body: "hello, world\n", ContentType: "text/plain"},
				{Name: "dir/synthetic.bin", Size: 100000},
				{Name: "cached.css", Body: "a{}", ContentType: "text/css", CacheControl: "public, max-age=60"},
			}},
			{Name: privBucket, Objects: []ObjectConfig{
				{Name: "secret.txt", Body: "top secret"},
			}},
		},
	}
}

// serve runs srv behind an originemu HTTP listener and returns its URL.
func serve(t testing.TB, srv http.Handler) string {
	t.Helper()
	url, _ := serveEmu(t, srv)
	return url
}

// serveEmu is serve that also returns the emulator (for its journal).
func serveEmu(t testing.TB, srv http.Handler) (string, *originemu.Emulator) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := originemu.Start(ctx, originemu.Config{
		Logger:    slog.New(slog.DiscardHandler),
		Listeners: []originemu.ListenerConfig{{Name: "gcs", Profile: originemu.HTTP, Backend: srv}},
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Close()
		cancel()
	})
	return e.URL("gcs"), e
}

func newTestServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, serve(t, srv)
}
