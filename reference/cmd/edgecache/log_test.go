package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/originemu"
)

const logConfig = `
origins:
  - {name: o, originAddress: 127.0.0.1, protocol: HTTP, port: PORT}
service:
  name: logs
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: m}]
    pathMatchers:
      - name: m
        routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: o}]
`

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveOnce starts serve with extra flags, sends n requests, stops it
// cleanly and returns what it logged.
func serveOnce(t *testing.T, n int, extra ...string) string {
	t.Helper()
	emu, err := originemu.Start(context.Background(), originemu.Config{Logger: slog.New(slog.DiscardHandler),
		Listeners: []originemu.ListenerConfig{{Name: "http", Profile: originemu.HTTP}}})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	_, port, _ := net.SplitHostPort(emu.Addr("http"))
	cfg := writeFile(t, filepath.Join(t.TempDir(), "c.yaml"), strings.ReplaceAll(logConfig, "PORT", port))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0"}, extra...), pw, stderr)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("no output: %v", <-done)
	}
	url, ok := strings.CutPrefix(sc.Text(), "listening ")
	if !ok {
		t.Fatalf("first line %q", sc.Text())
	}
	go io.Copy(io.Discard, pr)
	for range n {
		resp, err := http.Get(url + "/obj")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop")
	}
	return stderr.String()
}

// The log is written asynchronously, yet a clean stop loses no record: the
// requests sent just before it are all in the log once serve returns.
func TestServeLogsEveryRequestBeforeItStops(t *testing.T) {
	out := serveOnce(t, 20)
	if got := strings.Count(out, `"msg":"client request"`); got != 20 {
		t.Fatalf("%d client request records for 20 requests:\n%.3000s", got, out)
	}
	if !strings.Contains(out, `"msg":"edgecache shutting down: finishing in-flight requests"`) {
		t.Errorf("the shutdown record is missing:\n%.3000s", out)
	}
}

func TestServeLogLevelWarnHasNoRequestRecords(t *testing.T) {
	out := serveOnce(t, 3, "--log-level", "warn")
	if strings.Contains(out, "client request") || strings.Contains(out, "origin attempt") {
		t.Fatalf("--log-level warn logged per-request records:\n%.3000s", out)
	}
}

func TestServeLogLevelMustBeALevel(t *testing.T) {
	_, err := parseServe([]string{"--config", "c.yaml", "--listen", "127.0.0.1:0", "--log-level", "loud"})
	if err == nil || !strings.Contains(err.Error(), "log-level") {
		t.Fatalf("parseServe(--log-level loud) = %v, want a usage error naming the flag", err)
	}
}
