package edge

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
	"github.com/edgeconform/edgeconform/reference/cache/entry"
)

const cacheConfig = `
origins:
  - {name: h1, originAddress: origin.test, protocol: HTTP, port: {{port "http"}}}
service:
  name: cache
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: main}]
    pathMatchers:
      - name: main
        routeRules:
          - priority: 1
            matchRules: [{prefixMatch: /o/}]
            origin: h1
            routeMethods: {allowedMethods: [GET, HEAD, POST]}
            routeAction: {cdnPolicy: {cacheMode: USE_ORIGIN_HEADERS}}
          - priority: 2
            matchRules: [{prefixMatch: /static/}]
            origin: h1
            routeAction: {cdnPolicy: {cacheMode: CACHE_ALL_STATIC, defaultTtl: 30s}}
`

func (r *rig) server() *Server { return r.edge.Config.Handler.(*Server) }

func (r *rig) put(specs ...objects.Spec) {
	r.t.Helper()
	if err := r.emu.PutObjects(specs...); err != nil {
		r.t.Fatal(err)
	}
}

// get does a GET and waits for its log record (written once the handler is
// done, after a fill's commit), so a next request sees the stored entry.
func (r *rig) get(path string, hdr ...string) (*http.Response, []byte) {
	r.t.Helper()
	resp, body, err := r.do("GET", "client.example", path, hdr...)
	if err != nil {
		r.t.Fatalf("GET %s: %v", path, err)
	}
	return resp, body
}

// originCount waits for n origin requests under path to end, then checks
// there are no more. Callers have every client response in hand, and the
// journal records a request when it arrives, so the count is final.
func (r *rig) originCount(path string, n int) {
	r.t.Helper()
	r.waitEnded(path, n)
	if got := len(r.journal(path)); got != n {
		r.t.Fatalf("%d origin requests for %s, want %d", got, path, n)
	}
}

func (r *rig) waitLogged(path string, n int) {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := 0
		for _, rec := range r.logs.records("client request") {
			if rec["uri"] == path {
				c++
			}
		}
		if c >= n {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d client records for %s, want %d", c, path, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// CCH-3, CCH-7: max-age=60 under USE_ORIGIN_HEADERS: the second GET is a
// hit with Age and never reaches the origin; HEAD is served from it too.
func TestCacheHitWithAge(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/fresh"
	r.put(objects.Spec{Path: path, CacheControl: "max-age=60"})
	resp, body := r.get(path)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Status") != "edgecache; fwd=miss" {
		t.Fatalf("first GET: %d Cache-Status %q", resp.StatusCode, resp.Header.Get("Cache-Status"))
	}
	if err := synth.Verify(synth.Object{Path: path, Size: 1024, Version: "1"}, 0, body); err != nil || len(body) != 1024 {
		t.Fatalf("first body: %d bytes, %v", len(body), err)
	}
	r.waitLogged(path, 1)
	resp, body = r.get(path)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Status") != "edgecache; hit" || resp.Header.Get("Age") == "" {
		t.Fatalf("second GET: %d Cache-Status %q Age %q", resp.StatusCode, resp.Header.Get("Cache-Status"), resp.Header.Get("Age"))
	}
	if err := synth.Verify(synth.Object{Path: path, Size: 1024, Version: "1"}, 0, body); err != nil || len(body) != 1024 {
		t.Fatalf("hit body: %d bytes, %v", len(body), err)
	}
	resp, body, err := r.do("HEAD", "client.example", path)
	if err != nil || resp.StatusCode != 200 || resp.ContentLength != 1024 || len(body) != 0 || resp.Header.Get("Cache-Status") != "edgecache; hit" {
		t.Fatalf("HEAD: %v %v", resp, err)
	}
	r.originCount(path, 1)
	r.waitRecord("client request", func(m map[string]any) bool { return m["uri"] == path && m["cache_status"] == "hit" })
	r.waitRecord("client request", func(m map[string]any) bool { return m["uri"] == path && m["cache_status"] == "miss" })
}

// holdUntilCollapsed releases the hold once the origin holds the leader's
// request and n followers have joined its fill.
func (r *rig) holdUntilCollapsed(hold string, n int64) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		waiting := 0
		for _, h := range r.emu.Holds() {
			if h.Name == hold {
				waiting = h.Waiting
			}
		}
		if waiting >= 1 && r.server().group.Stats().Joins >= n {
			r.emu.Release(hold)
			return
		}
		if time.Now().After(deadline) {
			r.emu.Release(hold)
			r.t.Errorf("hold %s: %d waiting, %d joins; want 1 and %d", hold, waiting, r.server().group.Stats().Joins, n)
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// concurrent runs n GETs of path at once and returns their bodies and
// read errors.
func (r *rig) concurrent(path string, n int) ([][]byte, []error, []*http.Response) {
	bodies, errs, resps := make([][]byte, n), make([]error, n), make([]*http.Response, n)
	client := r.edge.Client()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := client.Get(r.edge.URL + path)
			if err != nil {
				errs[i] = err
				return
			}
			resps[i] = resp
			bodies[i], errs[i] = io.ReadAll(resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	return bodies, errs, resps
}

// COL-1, COL-2, COL-5: 1,000 concurrent cold GETs, held at the origin
// until all have joined, become one origin request and every client gets
// the whole, byte-identical object.
func TestCollapsedFill(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/cold"
	const n = 1000
	size := int64(64 << 10)
	r.put(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60"})
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Action: rules.Action{Hold: &rules.Hold{Name: "cold"}}}); err != nil {
		t.Fatal(err)
	}
	go r.holdUntilCollapsed("cold", n-1)
	bodies, errs, resps := r.concurrent(path, n)
	collapsed := 0
	for i := range n {
		if errs[i] != nil || resps[i].StatusCode != 200 {
			t.Fatalf("client %d: %v", i, errs[i])
		}
		if err := synth.Verify(synth.Object{Path: path, Size: size, Version: "1"}, 0, bodies[i]); err != nil || int64(len(bodies[i])) != size {
			t.Fatalf("client %d: %d bytes, %v", i, len(bodies[i]), err)
		}
		if strings.HasSuffix(resps[i].Header.Get("Cache-Status"), "; collapsed") {
			collapsed++
		}
	}
	if collapsed != n-1 {
		t.Fatalf("%d collapsed responses, want %d", collapsed, n-1)
	}
	r.originCount(path, 1)
}

// TMO-6, COL-7: a fill the origin truncates truncates every client and is
// not cached: the next GET goes to the origin again.
func TestCollapsedTruncationNotCached(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/cut"
	const n = 20
	r.put(objects.Spec{Path: path, CacheControl: "max-age=60"})
	after := int64(500)
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Action: rules.Action{
		Hold: &rules.Hold{Name: "cut"}, Truncate: &rules.Cut{AfterBytes: &after}}}); err != nil {
		t.Fatal(err)
	}
	go r.holdUntilCollapsed("cut", n-1)
	bodies, errs, _ := r.concurrent(path, n)
	for i := range n {
		if errs[i] == nil || len(bodies[i]) > 500 {
			t.Fatalf("client %d read %d bytes, err %v; want a truncated body", i, len(bodies[i]), errs[i])
		}
	}
	r.originCount(path, 1)
	r.waitLogged(path, n)
	resp, body := r.get(path)
	if resp.StatusCode != 200 || len(body) != 1024 || resp.Header.Get("Cache-Status") != "edgecache; fwd=miss" {
		t.Fatalf("GET after truncation: %d, %d bytes, Cache-Status %q", resp.StatusCode, len(body), resp.Header.Get("Cache-Status"))
	}
	r.originCount(path, 2)
}

// RNG-3: range requests are answered from the stored object; POST is not
// cached and invalidates the key (CCH-7).
func TestRangeHitsAndPostInvalidates(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/r"
	r.put(objects.Spec{Path: path, CacheControl: "max-age=60"})
	r.get(path)
	r.waitLogged(path, 1)
	_, full := r.get(path)
	for range 2 {
		resp, body := r.get(path, "Range", "bytes=5-14")
		if resp.StatusCode != 206 || string(body) != string(full[5:15]) || resp.Header.Get("Cache-Status") != "edgecache; hit" {
			t.Fatalf("range GET: %d, %d bytes, Cache-Status %q", resp.StatusCode, len(body), resp.Header.Get("Cache-Status"))
		}
	}
	r.originCount(path, 1)
	if resp, _ := r.get(path); resp.Header.Get("Cache-Status") != "edgecache; hit" {
		t.Fatalf("full GET after ranges: Cache-Status %q, want a hit", resp.Header.Get("Cache-Status"))
	}
	for range 2 {
		if s := r.status("POST", "client.example", path); s != 200 {
			t.Fatalf("POST: %d", s)
		}
	}
	r.originCount(path, 3)
	if resp, _ := r.get(path); resp.Header.Get("Cache-Status") != "edgecache; fwd=miss" {
		t.Fatalf("GET after POST: Cache-Status %q, want a miss", resp.Header.Get("Cache-Status"))
	}
	r.originCount(path, 4)
}

// CCH-2: CACHE_ALL_STATIC stores static content types without directives
// (video/mp2t) for defaultTtl, and not application/octet-stream.
func TestCacheAllStaticDefault(t *testing.T) {
	r := newRig(t, cacheConfig)
	r.put(objects.Spec{Path: "/static/seg.ts", ContentType: "video/mp2t"})
	for _, tc := range []struct {
		path   string
		origin int
		hit    bool
	}{
		{"/static/blob", 2, false},
		{"/static/seg.ts", 1, true},
	} {
		r.get(tc.path)
		r.waitLogged(tc.path, 1)
		resp, body := r.get(tc.path)
		if len(body) != 1024 || (resp.Header.Get("Cache-Status") == "edgecache; hit") != tc.hit {
			t.Errorf("%s: second GET %d bytes, Cache-Status %q, want hit=%v", tc.path, len(body), resp.Header.Get("Cache-Status"), tc.hit)
		}
		r.originCount(tc.path, tc.origin)
	}
	// Stored for defaultTtl (30s): the entry's TTL is the route's.
	rd, ok := r.server().store.Open("//client.example/static/seg.ts")
	if !ok {
		t.Fatal("no stored entry for /static/seg.ts")
	}
	defer rd.Close()
	var m entry.Meta
	if err := json.Unmarshal(rd.Meta(), &m); err != nil || m.TTL != 30*time.Second {
		t.Fatalf("stored TTL %v (%v), want defaultTtl 30s", m.TTL, err)
	}
}

// CCH-1: a response with Set-Cookie is never stored.
func TestSetCookieNotCached(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/cookie"
	r.put(objects.Spec{Path: path, CacheControl: "max-age=60", Headers: map[string]string{"Set-Cookie": "s=1"}})
	r.get(path)
	r.waitLogged(path, 1)
	if resp, _ := r.get(path); resp.Header.Get("Cache-Status") != "edgecache; fwd=miss" {
		t.Fatalf("second GET: Cache-Status %q, want a miss", resp.Header.Get("Cache-Status"))
	}
	r.originCount(path, 2)
}

// LOG-1, COL-2: every client request of a collapsed fill is logged once;
// followers name the fill's request (the leader's) in fill_request_id, and
// the origin fetch is logged once, under the leader's request_id.
func TestCollapsedFillLogging(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/logged"
	const n = 5
	r.put(objects.Spec{Path: path, CacheControl: "max-age=60"})
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Action: rules.Action{Hold: &rules.Hold{Name: "logged"}}}); err != nil {
		t.Fatal(err)
	}
	go r.holdUntilCollapsed("logged", n-1)
	r.concurrent(path, n)
	r.waitLogged(path, n)
	var leader string
	followers := 0
	for _, rec := range r.logs.records("client request") {
		if rec["uri"] != path {
			continue
		}
		switch rec["cache_status"] {
		case "miss":
			leader = rec["request_id"].(string)
		case "collapsed":
			followers++
		}
	}
	if leader == "" || followers != n-1 {
		t.Fatalf("leader %q, %d followers; want one leader and %d followers", leader, followers, n-1)
	}
	for _, rec := range r.logs.records("client request") {
		if rec["uri"] == path && rec["cache_status"] == "collapsed" && rec["fill_request_id"] != leader {
			t.Fatalf("follower record %v: fill_request_id %v, want %s", rec["request_id"], rec["fill_request_id"], leader)
		}
	}
	attempts := 0
	for _, rec := range r.logs.records("origin attempt") {
		if rec["request_id"] == leader {
			attempts++
		} else if rec["request_id"] != "" {
			t.Errorf("origin attempt record %v names a request other than the leader", rec)
		}
	}
	if attempts != 1 || len(r.journal(path)) != 1 {
		t.Fatalf("%d origin attempt records for the leader, %d origin requests; want 1 and 1", attempts, len(r.journal(path)))
	}
}
