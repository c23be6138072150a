package node_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/edge"
	"github.com/edgeconform/edgeconform/reference/node"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// One assembled node, served as edgecache serve serves it (on either
// HTTP/1.1 server), answers a miss from the origin and the repeat from its
// cache (CCH-2), counts both, and shuts down cleanly.
func TestNodeServesAndCaches(t *testing.T) {
	for _, h1 := range []string{node.H1Serve, node.NetHTTP} {
		t.Run(strings.ReplaceAll(h1, "/", "-"), func(t *testing.T) { testNodeServes(t, h1) })
	}
}

func testNodeServes(t *testing.T, h1 string) {
	emu, err := originemu.Start(context.Background(), originemu.Config{
		Listeners: []originemu.ListenerConfig{{Name: "http", Profile: originemu.HTTP}},
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	if err := emu.PutObjects(objects.Spec{Path: "/static/a.js", CacheControl: "max-age=60"}); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(emu.Addr("http"))
	cfg, err := config.Load([]byte(fmt.Sprintf(`
origins:
  - {name: h1, originAddress: origin.test, protocol: HTTP, port: %s}
service:
  name: node
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: main}]
    pathMatchers:
      - name: main
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /}], origin: h1}
`, port)), config.Options{Lab: true})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	n, err := node.New(cfg, node.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		node.WithUpstream(upstream.Options{Resolve: map[string]string{"origin.test": "127.0.0.1"}}),
		node.WithEdge(edge.WithName("node-test")), node.WithHTTP1Server(h1))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 1)
	srv := n.Serve(ln, errs)

	for i, want := range []string{"node-test; fwd=miss", "node-test; hit"} {
		resp, err := http.Get("http://" + ln.Addr().String() + "/static/a.js")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Fatalf("request %d: %d, %d bytes, %v", i, resp.StatusCode, len(body), err)
		}
		if got := resp.Header.Get("Cache-Status"); got != want {
			t.Errorf("request %d: Cache-Status %q, want %q", i, got, want)
		}
	}
	if reqs := emu.Journal().Query(journal.Query{PathPrefix: "/static/"}).Requests; len(reqs) != 1 {
		t.Errorf("CCH-2: %d origin requests, want 1 (the repeat is a hit)", len(reqs))
	}
	// The node registered its cache series in its metrics (RegisterCache).
	mfs, err := n.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, mf := range mfs {
		series[mf.GetName()] = len(mf.GetMetric())
	}
	if series["edgecache_cache_responses_total"] != 2 || series["edgecache_store_entries"] != 1 {
		t.Errorf("metrics: want the miss and hit series and the store's gauge, got %v", series)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errs; err != http.ErrServerClosed {
		t.Errorf("Serve ended with %v, want http.ErrServerClosed", err)
	}
	n.Close()
	if !strings.Contains(logs.String(), `"cache_status":"hit"`) {
		t.Errorf("no client request record with cache_status hit in the node's log:\n%s", logs.String())
	}
}

// An HTTP/1.1 server New does not know is refused, naming it.
func TestNodeRefusesUnknownHTTP1Server(t *testing.T) {
	cfg, err := config.Load([]byte(`
origins:
  - {name: h1, originAddress: origin.test, protocol: HTTP, port: 80}
service:
  name: node
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: main}]
    pathMatchers:
      - name: main
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /}], origin: h1}
`), config.Options{Lab: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = node.New(cfg, node.WithHTTP1Server("fasthttp"))
	if err == nil || !strings.Contains(err.Error(), `"fasthttp"`) {
		t.Fatalf("New with an unknown HTTP/1.1 server: %v, want an error naming it", err)
	}
}
