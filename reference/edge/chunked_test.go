package edge

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
	"github.com/edgeconform/edgeconform/reference/shield"
)

// Issue #12 item 8, RFC 9112 section 7.1: an origin response framed with
// Transfer-Encoding: chunked (no Content-Length) is a complete message once
// its last chunk arrives: a small cacheable object so framed is served
// whole and cached (the next GET is a hit reaching no origin). RNG-1 still
// holds: an object over 1 MiB without Content-Length is served but not
// stored.
func TestChunkedOriginResponse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		size     int64
		noRanges bool // the origin ignores Range: a 200, not a 206
		cached   bool
	}{
		{"small, 206", 10 << 10, false, true},
		{"small, 200", 10 << 10, true, true},
		{"large, 200 (RNG-1)", 3 << 20, true, false},
		{"large, 206 (RNG-1)", 3 << 20, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, cacheConfig)
			const path = "/o/chunked"
			size := tc.size
			r.put(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60", NoRanges: tc.noRanges})
			if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Unlimited: true,
				Action: rules.Action{Omit: []string{"Content-Length"}}}); err != nil {
				t.Fatal(err)
			}
			obj := synth.Object{Path: path, Size: size, Version: "1"}
			for i, want := range []string{"edgecache; fwd=miss", map[bool]string{true: "edgecache; hit", false: "edgecache; fwd=miss"}[tc.cached]} {
				resp, body := r.get(path)
				if resp.StatusCode != 200 || int64(len(body)) != size || synth.Verify(obj, 0, body) != nil {
					t.Fatalf("GET %d: %d, %d bytes (want the whole %d): %.200q", i, resp.StatusCode, len(body), size, body)
				}
				if cs := resp.Header.Get("Cache-Status"); cs != want {
					t.Fatalf("GET %d: Cache-Status %q, want %q", i, cs, want)
				}
				if q := r.waitEnded(path, 1)[0]; q.Proto != "HTTP/1.1" {
					t.Fatalf("origin exchange %+v: want HTTP/1.1", q)
				}
				r.waitLogged(path, i+1)
			}
			fills := map[bool]int{true: 1, false: 2}[tc.cached]
			if tc.size > ChunkSize/2 && !tc.noRanges {
				fills *= 2 // two chunks per GET
			}
			r.originCount(path, fills)
		})
	}
}

// The same through a shield tier (SHD-1): the shield's own response to its
// edge is framed with Content-Length; the small chunked object is cached
// at both tiers, and the second GET is a hit at the edge.
func TestChunkedOriginResponseThroughShield(t *testing.T) {
	tr := newTiers(t, 1, func(u *url.URL) shield.Tiers { return shield.Tiers{Default: u} })
	const path = "/o/chunked"
	size := int64(10 << 10)
	if err := tr.emu.PutObjects(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Unlimited: true,
		Action: rules.Action{Omit: []string{"Content-Length"}}}); err != nil {
		t.Fatal(err)
	}
	obj := synth.Object{Path: path, Size: size, Version: "1"}
	for i, want := range []string{"shield; fwd=miss, edge-1; fwd=miss", "shield; fwd=miss, edge-1; hit"} {
		req, _ := http.NewRequest("GET", tr.edges[0].URL+path, nil)
		req.Host = "client.example"
		resp, err := tr.edges[0].Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || int64(len(body)) != size || synth.Verify(obj, 0, body) != nil {
			t.Fatalf("GET %d: %d, %d bytes, %v", i, resp.StatusCode, len(body), err)
		}
		if cs := strings.Join(resp.Header.Values("Cache-Status"), ", "); cs != want {
			t.Fatalf("GET %d: Cache-Status %q, want %q", i, cs, want)
		}
	}
	if n := len(tr.emu.Journal().Query(journal.Query{PathPrefix: path}).Requests); n != 1 {
		t.Fatalf("%d origin requests, want 1", n)
	}
}
