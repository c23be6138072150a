package main

import (
	"context"
	"io"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/originemu"
)

// The demo configuration shipped in fixtures/ parses and starts.
func TestDemoFixtureStarts(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "..", "..", "fixtures", "originemu-demo.yaml")
	s, err := parseArgs([]string{"--config", path}, io.Discard)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	if len(s.cfg.Listeners) != 3 || len(s.cfg.Objects) != 3 || len(s.cfg.Rules) != 1 {
		t.Fatalf("demo config: %d listeners, %d objects, %d rules", len(s.cfg.Listeners), len(s.cfg.Objects), len(s.cfg.Rules))
	}
	// Start it on free ports, so the test never collides with a running demo.
	for i := range s.cfg.Listeners {
		s.cfg.Listeners[i].Addr = "127.0.0.1:0"
	}
	e, err := originemu.Start(context.Background(), s.cfg)
	if err != nil {
		t.Fatalf("starting the demo config: %v", err)
	}
	e.Close()
}
