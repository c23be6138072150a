package edge

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/shield"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

const tierConfig = `
origins:
  - {name: h1, originAddress: origin.test, protocol: HTTP, port: {{port}}, timeout: {connectTimeout: 15s, maxAttemptsTimeout: 30s}}
  - name: regional
    originAddress: origin.test
    protocol: HTTP
    port: {{port}}
    flexShielding: {flexShieldingRegions: [AFRICA_SOUTH1]}
service:
  name: tiers
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: main}]
    pathMatchers:
      - name: main
        routeRules:
          - priority: 1
            matchRules: [{prefixMatch: /o/}]
            origin: h1
            routeAction: {cdnPolicy: {cacheMode: USE_ORIGIN_HEADERS}}
          - priority: 2
            matchRules: [{prefixMatch: /r/}]
            origin: regional
            routeAction: {cdnPolicy: {cacheMode: USE_ORIGIN_HEADERS}}
`

// tiers is one origin emulator, a shield node and edges in front of it.
type tiers struct {
	emu    *originemu.Emulator
	shield *Server
	edges  []*httptest.Server
	nodes  []*Server
}

func startNode(t *testing.T, emu *originemu.Emulator, opts ...Option) (*Server, *httptest.Server) {
	t.Helper()
	_, port, _ := net.SplitHostPort(emu.Addr("http"))
	var buf bytes.Buffer
	template.Must(template.New("cfg").Funcs(template.FuncMap{"port": func() string { return port }}).
		Parse(tierConfig)).Execute(&buf, nil)
	cfg, err := config.Load(buf.Bytes(), config.Options{Lab: true})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	client := upstream.New(upstream.Options{Logger: log, Resolve: map[string]string{"origin.test": "127.0.0.1"}})
	t.Cleanup(client.Close)
	srv, err := New(cfg, client, log, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs
}

func newTiers(t *testing.T, edges int, tiersFor func(shieldURL *url.URL) shield.Tiers) *tiers {
	t.Helper()
	emu, err := originemu.Start(context.Background(), originemu.Config{
		Listeners: []originemu.ListenerConfig{{Name: "http", Profile: originemu.HTTP}},
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	tr := &tiers{emu: emu}
	var shieldHS *httptest.Server
	tr.shield, shieldHS = startNode(t, emu, WithName("shield"))
	su, _ := url.Parse(shieldHS.URL)
	for i := range edges {
		srv, hs := startNode(t, emu, WithName("edge-"+string(rune('1'+i))), WithShields(tiersFor(su)))
		tr.nodes, tr.edges = append(tr.nodes, srv), append(tr.edges, hs)
	}
	return tr
}

// SHD-1, COL-1: three edges in front of one shield: concurrent cold
// requests on every edge collapse per tier, and the origin sees one fill
// per key (one per chunk for a large object).
func TestShieldOneOriginFillPerKey(t *testing.T) {
	tr := newTiers(t, 3, func(u *url.URL) shield.Tiers { return shield.Tiers{Default: u} })
	for _, tc := range []struct {
		path  string
		size  int64
		fills int
	}{
		{"/o/small", 200 << 10, 1},
		{"/o/large", 2*ChunkSize + 1000, 3},
	} {
		size := tc.size
		if err := tr.emu.PutObjects(objects.Spec{Path: tc.path, Size: &size, CacheControl: "max-age=60"}); err != nil {
			t.Fatal(err)
		}
		obj := synth.Object{Path: tc.path, Size: size, Version: "1"}
		// Hold the origin until every edge's clients have joined their
		// edge's fill and the shield has joined the edges' fills.
		holdName := strings.ReplaceAll(tc.path[1:], "/", "-")
		if _, err := tr.emu.AddRules(rules.Rule{Match: rules.Match{Path: tc.path}, Action: rules.Action{Hold: &rules.Hold{Name: holdName}}}); err != nil {
			t.Fatal(err)
		}
		const perEdge = 10
		joins := make([]int64, len(tr.nodes))
		for i, n := range tr.nodes {
			joins[i] = n.group.Stats().Joins
		}
		shieldJoins := tr.shield.group.Stats().Joins
		go func() {
			// The origin's connectTimeout (15s) outlasts this wait.
			deadline := time.Now().Add(10 * time.Second)
			for {
				ready := tr.shield.group.Stats().Joins-shieldJoins >= int64(len(tr.nodes)-1)
				held := false
				for _, h := range tr.emu.Holds() {
					held = held || (h.Name == holdName && h.Waiting >= 1)
				}
				ready = ready && held // the shield's fill is at the origin
				for i, n := range tr.nodes {
					ready = ready && n.group.Stats().Joins-joins[i] >= perEdge-1
				}
				if ready {
					break
				}
				if time.Now().After(deadline) {
					t.Errorf("%s: the tiers did not collapse in 10s: shield joins %d", tc.path, tr.shield.group.Stats().Joins-shieldJoins)
					break
				}
				time.Sleep(2 * time.Millisecond)
			}
			tr.emu.Release(holdName)
		}()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failures []string
		statuses := map[string]int{}
		for _, e := range tr.edges {
			for range perEdge {
				wg.Go(func() {
					resp, err := e.Client().Get(e.URL + tc.path)
					if err != nil {
						mu.Lock()
						failures = append(failures, err.Error())
						mu.Unlock()
						return
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					mu.Lock()
					defer mu.Unlock()
					if err != nil || resp.StatusCode != 200 || int64(len(body)) != size || synth.Verify(obj, 0, body) != nil {
						failures = append(failures, tc.path+": "+resp.Status)
					}
					statuses[strings.Join(resp.Header.Values("Cache-Status"), ", ")]++
				})
			}
		}
		wg.Wait()
		if len(failures) > 0 {
			t.Fatalf("%s: %d clients failed: %v", tc.path, len(failures), failures[:1])
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		reqs, err := tr.emu.Journal().WaitEnded(ctx, journal.Query{PathPrefix: tc.path}, tc.fills)
		cancel()
		if err != nil || len(reqs) != tc.fills {
			t.Fatalf("%s: %d origin requests (%v), want %d", tc.path, len(reqs), err, tc.fills)
		}
		// The leader on the edge whose fill reached the origin says so
		// for both tiers (RFC 9211: the shield's member first).
		leaders := 0
		for cs, n := range statuses {
			if strings.HasPrefix(cs, "shield; fwd=miss, edge-") && strings.HasSuffix(cs, "; fwd=miss") {
				leaders += n
			}
		}
		if leaders != 1 {
			t.Fatalf("%s: Cache-Status counts %v; want one leader through both tiers", tc.path, statuses)
		}
		if got := len(tr.emu.Journal().Query(journal.Query{PathPrefix: tc.path}).Requests); got != tc.fills {
			t.Fatalf("%s: %d origin requests, want %d", tc.path, got, tc.fills)
		}
	}
}

// SHD-2 (EXT): an origin's flexShielding region picks its shield; other
// origins are filled directly.
func TestShieldRegionMapping(t *testing.T) {
	tr := newTiers(t, 1, func(u *url.URL) shield.Tiers {
		return shield.Tiers{Regions: map[string]*url.URL{"AFRICA_SOUTH1": u}}
	})
	size := int64(1000)
	if err := tr.emu.PutObjects(objects.Spec{Path: "/r/x", Size: &size, CacheControl: "max-age=60"},
		objects.Spec{Path: "/o/x", Size: &size, CacheControl: "max-age=60"}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/r/x": "shield; fwd=miss, edge-1; fwd=miss",
		"/o/x": "edge-1; fwd=miss",
	} {
		resp, err := http.Get(tr.edges[0].URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := strings.Join(resp.Header.Values("Cache-Status"), ", "); got != want {
			t.Errorf("%s: Cache-Status %q, want %q", path, got, want)
		}
	}
}

// A shield that cannot be reached is a 502 at the edge, named in the log
// as a shield fill.
func TestShieldUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead, _ := url.Parse("http://" + ln.Addr().String())
	ln.Close()
	tr := newTiers(t, 1, func(*url.URL) shield.Tiers { return shield.Tiers{Default: dead} })
	resp, err := http.Get(tr.edges[0].URL + "/o/x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
}

// TMO-6 through tiers: an origin body cut short reaches the client through
// the shield and the edge as a visibly truncated response, for a client
// with and without a Range of its own.
func TestShieldPassesTruncation(t *testing.T) {
	tr := newTiers(t, 1, func(u *url.URL) shield.Tiers { return shield.Tiers{Default: u} })
	for _, hdr := range [][]string{nil, {"Range", "bytes=0-499"}} {
		path := "/o/cut-" + strings.Join(hdr, "")
		path = strings.NewReplacer(" ", "", "=", "", ",", "").Replace(path)
		size := int64(4096)
		if err := tr.emu.PutObjects(objects.Spec{Path: path, Size: &size}); err != nil {
			t.Fatal(err)
		}
		after := int64(100)
		if _, err := tr.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Action: rules.Action{Truncate: &rules.Cut{AfterBytes: &after}}}); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("GET", tr.edges[0].URL+path, nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Fatalf("%v: %d, %d bytes, read cleanly; want a visible truncation", hdr, resp.StatusCode, len(body))
		}
		if resp.StatusCode != 200 && resp.StatusCode != 206 {
			t.Fatalf("%v: status %d", hdr, resp.StatusCode)
		}
	}
}

// RNG-1 through tiers: the shield's own response always has a Date and a
// Content-Length, so it tells the edge (shield.UncacheableHeader) when the
// origin's did not; neither tier stores the object, and clients never see
// the internal header.
func TestShieldPassesRNG1(t *testing.T) {
	tr := newTiers(t, 1, func(u *url.URL) shield.Tiers { return shield.Tiers{Default: u} })
	const path = "/o/nodate"
	size := int64(3 << 20)
	if err := tr.emu.PutObjects(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Unlimited: true, Action: rules.Action{Omit: []string{"Date"}}}); err != nil {
		t.Fatal(err)
	}
	obj := synth.Object{Path: path, Size: size, Version: "1"}
	for i := range 2 {
		resp, err := http.Get(tr.edges[0].URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || int64(len(body)) != size || synth.Verify(obj, 0, body) != nil {
			t.Fatalf("GET %d: %d bytes, %v", i, len(body), err)
		}
		if got := strings.Join(resp.Header.Values("Cache-Status"), ", "); got != "shield; fwd=miss, edge-1; fwd=miss" {
			t.Fatalf("GET %d: Cache-Status %q, want a miss at both tiers", i, got)
		}
		if resp.Header.Get(shield.UncacheableHeader) != "" {
			t.Fatalf("GET %d: the internal %s header reached the client", i, shield.UncacheableHeader)
		}
	}
	for _, q := range tr.emu.Journal().Query(journal.Query{PathPrefix: path}).Requests {
		for _, h := range q.Headers {
			if strings.EqualFold(h.Name, shield.TierHeader) {
				t.Fatalf("the origin saw the internal %s header", shield.TierHeader)
			}
		}
	}
}
