package edge

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

const faultConfig = `
origins:
  - {name: h1, originAddress: origin.test, protocol: HTTP, port: {{port "http"}}}
  - {name: h2, originAddress: origin.test, protocol: HTTP2, port: {{port "h2"}}}
service:
  name: faults
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: main}]
    pathMatchers:
      - name: main
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /h1/}], origin: h1, routeAction: {cdnPolicy: {cacheMode: USE_ORIGIN_HEADERS}}}
          - {priority: 2, matchRules: [{prefixMatch: /h2/}], origin: h2, routeAction: {cdnPolicy: {cacheMode: USE_ORIGIN_HEADERS}}}
          - {priority: 3, matchRules: [{prefixMatch: /bypass/}], origin: h1, routeAction: {cdnPolicy: {cacheMode: BYPASS_CACHE}}}
`

// wantSynthesized checks that a client got a response the edge made itself
// for a failed fill (ATT-8, COL-7): a 502 with its reason and Cache-Status
// (cacheStatus, or any of this node's when empty), never a bare close or a
// stream reset before the header.
func wantSynthesized(t *testing.T, who string, res result, cacheStatus string) {
	t.Helper()
	if res.err != nil || res.resp == nil {
		t.Errorf("%s: no response (%v); want a 502 with its reason", who, res.err)
		return
	}
	body := string(res.body)
	if res.resp.StatusCode != http.StatusBadGateway || !strings.HasPrefix(body, "502 Bad Gateway: ") || len(body) <= len("502 Bad Gateway: \n") {
		t.Errorf("%s: %d %q; want a 502 naming its reason", who, res.resp.StatusCode, body)
	}
	if got := res.resp.Header.Get("Cache-Status"); got != cacheStatus && (cacheStatus != "" || !strings.HasPrefix(got, "edgecache; ")) {
		t.Errorf("%s: Cache-Status %q, want %q", who, got, cacheStatus)
	}
}

// Issue #12 item 7 (ATT-8, COL-7): a fill that fails before the client's
// response header was sent (the origin resets, truncates, sends
// RST_STREAM or GOAWAY before its headers or at body byte 0) gives its
// leader and every follower a 502 with its reason and Cache-Status, on
// HTTP/1.1 and h2 origins, for a small (whole) object and for the first
// chunk of a large one.
func TestFailedFillBeforeHeadersIsVisible(t *testing.T) {
	zero := int64(0)
	faults := []struct {
		name  string
		h2    bool
		fault rules.Action
	}{
		{"reset before headers", false, rules.Action{Reset: &rules.Cut{}}},
		{"truncate at byte 0", false, rules.Action{Truncate: &rules.Cut{AfterBytes: &zero}}},
		{"reset at byte 0", false, rules.Action{Reset: &rules.Cut{AfterBytes: &zero}}},
		{"rst_stream before headers", true, rules.Action{RSTStream: &rules.Cut{Code: "INTERNAL_ERROR"}}},
		{"rst_stream at byte 0", true, rules.Action{RSTStream: &rules.Cut{AfterBytes: &zero, Code: "INTERNAL_ERROR"}}},
		{"goaway before headers", true, rules.Action{GoAway: &rules.Cut{Code: "INTERNAL_ERROR"}}},
		{"goaway at byte 0", true, rules.Action{GoAway: &rules.Cut{AfterBytes: &zero, Code: "INTERNAL_ERROR"}}},
	}
	for _, f := range faults {
		for _, large := range []bool{false, true} {
			name := f.name + map[bool]string{false: ", small", true: ", large"}[large]
			t.Run(name, func(t *testing.T) {
				r := newRig(t, faultConfig)
				path := "/h1/obj"
				if f.h2 {
					path = "/h2/obj"
				}
				size := int64(1000)
				if large {
					size = largeSize
				}
				r.put(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60"})
				r.hold(path, "fault", f.fault)
				lead := r.goGet(t.Context(), path)
				r.waitArrived(path, 1)
				base := r.server().group.Stats().Joins
				followers := []<-chan result{r.goGet(t.Context(), path), r.goGet(t.Context(), path)}
				r.waitJoins(base, 2)
				r.release("fault")
				wantSynthesized(t, "leader", <-lead, "edgecache; fwd=miss")
				for i, ch := range followers {
					wantSynthesized(t, fmt.Sprintf("follower %d", i), <-ch, "edgecache; fwd=miss; collapsed")
				}
				r.waitLogged(path, 3)
				for _, rec := range r.logs.records("client request") {
					if rec["status"] != float64(502) || rec["proxy_status"] == "" || rec["proxy_status"] == nil {
						t.Errorf("log record %v: want status 502 and its proxy_status", rec)
					}
				}
			})
		}
	}
}

// Issue #12 item 7: a chunk fill that fails before its head (here chunk
// 1's, for ranges inside chunk 1 of an object whose chunk 0 is cached)
// gives the request and the requests that joined it a 502 with its reason.
func TestFailedChunkFillBeforeHeadersIsVisible(t *testing.T) {
	r := newRig(t, faultConfig)
	const path = "/h1/chunks"
	size := int64(largeSize)
	r.put(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60"})
	if resp, _ := r.get(path, "Range", "bytes=0-9"); resp.StatusCode != 206 {
		t.Fatalf("chunk 0: %d", resp.StatusCode)
	}
	r.waitLogged(path, 1)
	r.hold(path, "chunk1", rules.Action{Reset: &rules.Cut{}})
	rng := fmt.Sprintf("bytes=%d-%d", ChunkSize+10, ChunkSize+19)
	lead := r.goGet(t.Context(), path, "Range", rng)
	r.waitArrived(path, 2)
	base := r.server().group.Stats().Joins
	follower := r.goGet(t.Context(), path, "Range", rng)
	r.waitJoins(base, 1)
	r.release("chunk1")
	// Hit or collapsed: the manifest may be committed a moment after the
	// chunk-0 response.
	wantSynthesized(t, "leader", <-lead, "")
	wantSynthesized(t, "follower", <-follower, "")
}

// Issue #12 item 7 on the uncached path: an origin response whose body
// fails at byte 0 is answered 502 with its reason, not a bare close.
func TestUncachedBodyFailingAtByteZero(t *testing.T) {
	zero := int64(0)
	r := newRig(t, faultConfig)
	const path = "/bypass/obj"
	r.put(objects.Spec{Path: path})
	r.hold(path, "cut", rules.Action{Truncate: &rules.Cut{AfterBytes: &zero}})
	ch := r.goGet(t.Context(), path)
	r.release("cut")
	wantSynthesized(t, "client", <-ch, "edgecache; fwd=bypass")
}

// Issue #12 item 7 for h2 clients: a fill failing at body byte 0 gives an
// h2c client a 502 on its stream, not a RST_STREAM before any header.
func TestFailedFillBeforeHeadersH2Client(t *testing.T) {
	zero := int64(0)
	r := newRig(t, faultConfig)
	h2URL, client := r.h2cEdge()
	const path = "/h1/h2client"
	r.put(objects.Spec{Path: path, CacheControl: "max-age=60"})
	r.hold(path, "cut", rules.Action{Reset: &rules.Cut{AfterBytes: &zero}})
	get := func() <-chan result {
		ch := make(chan result, 1)
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", h2URL+path, nil)
			req.Host = "client.example"
			resp, err := client.Do(req)
			if err != nil {
				ch <- result{err: err}
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if resp.ProtoMajor != 2 {
				err = fmt.Errorf("client spoke %s, want h2", resp.Proto)
			}
			ch <- result{resp, body, err}
		}()
		return ch
	}
	lead := get()
	r.waitArrived(path, 1)
	base := r.server().group.Stats().Joins
	follower := get()
	r.waitJoins(base, 1)
	r.release("cut")
	wantSynthesized(t, "leader", <-lead, "edgecache; fwd=miss")
	wantSynthesized(t, "follower", <-follower, "edgecache; fwd=miss; collapsed")
}
