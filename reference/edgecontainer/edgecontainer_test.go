package edgecontainer_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/edgeconform/edgeconform/deploy/dockertest"
	"github.com/edgeconform/edgeconform/emulators/emucontainer"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/synth"
	"github.com/edgeconform/edgeconform/reference/edgecontainer"
)

func TestMain(m *testing.M) {
	dockertest.Setup()
	os.Exit(m.Run())
}

// TestRun puts an edge container in front of an emulator container on a
// private network: the edge reaches the origin by its network alias over
// h2 with TLS verified against the emulator's CA, caches the object
// (miss, then hit with one origin request), and reports it in /metrics.
func TestRun(t *testing.T) {
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	nw, err := network.New(ctx)
	testcontainers.CleanupNetwork(t, nw)
	if err != nil {
		t.Fatal(err)
	}
	emu, err := emucontainer.Run(ctx, emucontainer.WithListener("origin", "h2"), network.WithNetwork([]string{"origin.test"}, nw))
	testcontainers.CleanupContainer(t, emu)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`
origins:
  - {name: origin, originAddress: origin.test, protocol: HTTP2, port: %d, timeout: {connectTimeout: 2s, maxAttemptsTimeout: 5s}}
service:
  name: test
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: all}]
    pathMatchers:
      - name: all
        routeRules:
          - priority: 1
            matchRules: [{prefixMatch: /}]
            origin: origin
            routeAction: {cdnPolicy: {cacheMode: FORCE_CACHE_ALL, defaultTtl: 60s}}
`, emu.Listeners["origin"].Port)
	edge, err := edgecontainer.Run(ctx, edgecontainer.WithConfig([]byte(cfg)), edgecontainer.WithOriginCA(emu.CA),
		edgecontainer.WithLab(), network.WithNetwork([]string{"edge"}, nw))
	testcontainers.CleanupContainer(t, edge)
	if err != nil {
		t.Fatal(err)
	}

	obj := synth.Object{Path: "/v/seg1.ts", Size: 1024, Version: "1"}
	for i, want := range []string{"edgecache; fwd=miss", "edgecache; hit"} {
		resp, err := http.Get(edge.URL + obj.Path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Cache-Status") != want {
			t.Fatalf("request %d: %d, Cache-Status %q, want 200, %q", i+1, resp.StatusCode, resp.Header.Get("Cache-Status"), want)
		}
		if err := synth.Verify(obj, 0, body); err != nil || len(body) != int(obj.Size) {
			t.Fatalf("request %d: body of %d bytes: %v", i+1, len(body), err)
		}
	}
	snap, err := emu.Client().Journal(ctx, journal.Query{PathPrefix: obj.Path})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Requests) != 1 || snap.Requests[0].Proto != "HTTP/2.0" {
		t.Fatalf("origin saw %d requests (%+v), want 1 over HTTP/2.0", len(snap.Requests), snap.Requests)
	}
	m, err := edge.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := m[`edgecache_origin_attempts_total{origin="origin",outcome="usable"}`]; got != 1 {
		t.Fatalf("edgecache_origin_attempts_total{origin=origin,outcome=usable} = %v, want 1", got)
	}
}
