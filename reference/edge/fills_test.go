package edge

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

// COL-6, issue #12 item 2: clients that ask for distinct keys and go away
// at once cost the origin at most one chunk per key. Half the keys are
// large range-capable objects (the fill asks for chunk 0 only); the other
// half come from an origin that ignores Range and sends no Content-Length
// (a whole fill of unknown length, RNG-1: served, not stored), paced so
// that the fill is still running when the client leaves: with nobody
// attached it stops after ChunkSize bytes. Clients leave as HTTP/1.1 ones
// closing after the response header, and as h2 ones resetting the stream
// (RST_STREAM) once the origin has the request, as in a rapid-reset
// attack.
func TestAbandonedFillsCostOneChunk(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(map[bool]string{false: "http1 close", true: "h2c rst_stream"}[h2], func(t *testing.T) {
			r := newRig(t, cacheConfig)
			url, client := r.edge.URL, r.client()
			if h2 {
				url, client = r.h2cEdge()
			}
			const keys = 16
			paths := r.putAbandonable(keys)
			var wg sync.WaitGroup
			for _, path := range paths {
				wg.Go(func() {
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					if h2 {
						go func() { r.waitArrived(path, 1); cancel() }()
					}
					req, _ := http.NewRequestWithContext(ctx, "GET", url+path, nil)
					req.Host = "client.example"
					resp, err := client.Do(req)
					if err == nil {
						cancel() // gone before reading a byte of the body
						resp.Body.Close()
					}
				})
			}
			wg.Wait()
			var total int64
			for _, path := range paths {
				reqs := r.waitEnded(path, 1)
				var sent int64
				for _, q := range reqs {
					sent += q.BodyBytes
				}
				total += sent
				// Slack: what the origin wrote into socket buffers before
				// the edge closed the connection (a few 64 KiB drips).
				const slack = 512 << 10
				if sent > ChunkSize+slack {
					t.Errorf("%s: the origin sent %d bytes for a client that left at once; want at most one chunk (%d) + %d", path, sent, ChunkSize, slack)
				}
				if len(reqs) != 1 {
					t.Errorf("%s: %d origin requests, want 1", path, len(reqs))
				}
			}
			st := r.server().group.Stats()
			t.Logf("%d keys of 8 MiB, clients gone at once: origin sent %d bytes (%.2f chunks per key), %d fills abandoned",
				keys, total, float64(total)/keys/ChunkSize, st.Abandoned)
			if st.Abandoned < keys/2 {
				t.Errorf("%d fills abandoned, want at least the %d whole fills of unknown length", st.Abandoned, keys/2)
			}
		})
	}
}

// putAbandonable puts n objects of 8 MiB dripped at 64 KiB per 5 ms, every
// other one from an origin ignoring Range without Content-Length, and
// returns their paths (none a prefix of another).
func (r *rig) putAbandonable(n int) []string {
	drip := &rules.Drip{Bytes: 64 << 10, Every: rules.Duration(5 * time.Millisecond)}
	var paths []string
	for i := range n {
		path := fmt.Sprintf("/o/gone/%02d", i)
		size := int64(8 << 20)
		r.put(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60", NoRanges: i%2 == 1})
		act := rules.Action{Drip: drip}
		if i%2 == 1 {
			act.Omit = []string{"Content-Length"}
		}
		if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Unlimited: true, Action: act}); err != nil {
			r.t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

// h2cEdge serves the rig's edge over h2c (prior knowledge) too, and returns
// its URL and a client speaking h2c to it.
func (r *rig) h2cEdge() (string, *http.Client) {
	srv := httptest.NewUnstartedServer(r.server())
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	r.t.Cleanup(srv.Close)
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	r.t.Cleanup(tr.CloseIdleConnections)
	return srv.URL, &http.Client{Transport: tr}
}

// Issue #12 item 2: fills in flight are bounded (WithMaxFills): past the
// bound a miss is answered 503 with Retry-After and Cache-Status at once,
// with its reason in the log; joining a running fill is not refused; once
// fills end, misses fill again.
func TestMaxFillsAnswers503(t *testing.T) {
	r := newRig(t, cacheConfig, WithMaxFills(2))
	for _, p := range []string{"/o/cap/a", "/o/cap/b", "/o/cap/c"} {
		r.put(objects.Spec{Path: p, CacheControl: "max-age=60"})
	}
	r.hold("/o/cap/a", "cap-a", rules.Action{})
	r.hold("/o/cap/b", "cap-b", rules.Action{})
	a := r.goGet(t.Context(), "/o/cap/a")
	b := r.goGet(t.Context(), "/o/cap/b")
	r.waitArrived("/o/cap/", 2)
	resp, body := r.get("/o/cap/c")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		resp.Header.Get("Cache-Status") != "edgecache; fwd=miss" {
		t.Fatalf("miss past the cap: %d, Retry-After %q, Cache-Status %q: %q", resp.StatusCode,
			resp.Header.Get("Retry-After"), resp.Header.Get("Cache-Status"), body)
	}
	rec := r.waitRecord("client request", func(m map[string]any) bool { return m["uri"] == "/o/cap/c" })
	if rec["status"] != float64(503) || rec["proxy_status"] != "connection_limit_reached" || rec["error"] == nil {
		t.Fatalf("log record of the refused miss: %v", rec)
	}
	base := r.server().group.Stats().Joins
	follower := r.goGet(t.Context(), "/o/cap/a")
	r.waitJoins(base, 1)
	r.release("cap-a")
	r.release("cap-b")
	for i, ch := range []<-chan result{a, b, follower} {
		if res := <-ch; res.err != nil || res.resp.StatusCode != 200 {
			t.Fatalf("held request %d: %v %v", i, res.err, res.resp)
		}
	}
	r.waitLogged("/o/cap/a", 2)
	r.waitLogged("/o/cap/b", 1)
	if resp, _ := r.get("/o/cap/c"); resp.StatusCode != 200 {
		t.Fatalf("miss after the fills ended: %d", resp.StatusCode)
	}
	r.originCount("/o/cap/c", 1)
}
