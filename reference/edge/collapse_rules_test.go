package edge

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

// hold adds a rule holding the next request for path at the origin.
func (r *rig) hold(path, name string, extra rules.Action) {
	r.t.Helper()
	extra.Hold = &rules.Hold{Name: name}
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{Path: path}, Action: extra}); err != nil {
		r.t.Fatal(err)
	}
}

// release releases hold name once a request waits at it (a request the
// journal has recorded may not have reached the hold yet).
func (r *rig) release(name string) {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, h := range r.emu.Holds() {
			if h.Name == name && h.Waiting >= 1 {
				r.emu.Release(name)
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("nothing waits at hold %s", name)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitArrived waits until n requests for path have reached the origin.
func (r *rig) waitArrived(path string, n int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.emu.Journal().WaitRequests(ctx, journal.Query{PathPrefix: path}, n); err != nil {
		r.t.Fatalf("waiting for %d origin requests for %s: %v", n, path, err)
	}
}

// waitJoins waits until the edge's collapse group has counted n more joins
// than base.
func (r *rig) waitJoins(base int64, n int64) {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for r.server().group.Stats().Joins-base < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("%d joins, want %d", r.server().group.Stats().Joins-base, n)
		}
		time.Sleep(time.Millisecond)
	}
}

type result struct {
	resp *http.Response
	body []byte
	err  error
}

func (r *rig) goGet(ctx context.Context, path string, hdr ...string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", r.edge.URL+path, nil)
		req.Host = "client.example"
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := r.client().Do(req)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		ch <- result{resp, body, err}
	}()
	return ch
}

// COL-2 (HST-5): the origin sees the leader's request only: its
// User-Agent, not the followers'.
func TestCollapseOriginSeesLeaderOnly(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/leader"
	r.put(objects.Spec{Path: path, CacheControl: "max-age=60"})
	r.hold(path, "leader", rules.Action{})
	lead := r.goGet(t.Context(), path, "User-Agent", "leader-agent", "X-Client", "leader")
	r.waitArrived(path, 1)
	base := r.server().group.Stats().Joins
	var followers []<-chan result
	for _, ua := range []string{"follower-1", "follower-2"} {
		followers = append(followers, r.goGet(t.Context(), path, "User-Agent", ua, "X-Client", ua))
	}
	r.waitJoins(base, 2)
	r.release("leader")
	for _, ch := range append(followers, lead) {
		if res := <-ch; res.err != nil || res.resp.StatusCode != 200 {
			t.Fatalf("client: %v", res.err)
		}
	}
	reqs := r.journal(path)
	if len(reqs) != 1 {
		t.Fatalf("%d origin requests, want 1", len(reqs))
	}
	if ua, _ := header(reqs[0], "User-Agent"); ua != "leader-agent" {
		t.Fatalf("origin saw User-Agent %q, want the leader's", ua)
	}
	if c, _ := header(reqs[0], "X-Client"); c != "leader" {
		t.Fatalf("origin saw X-Client %q, want the leader's", c)
	}
}

// COL-3: requests for different keys are never collapsed: both reach the
// origin while the first is still held there.
func TestCollapseDifferentKeys(t *testing.T) {
	r := newRig(t, cacheConfig)
	r.put(objects.Spec{Path: "/o/k1", CacheControl: "max-age=60"}, objects.Spec{Path: "/o/k2", CacheControl: "max-age=60"})
	// A barrier for three: it opens only if all three reach the origin
	// while none has been answered, that is if none was collapsed.
	if _, err := r.emu.AddRules(rules.Rule{Match: rules.Match{PathPrefix: "/o/k"}, Times: 3,
		Action: rules.Action{Hold: &rules.Hold{Name: "keys", Count: 3, Timeout: rules.Duration(5 * time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a := r.goGet(t.Context(), "/o/k1")
	b := r.goGet(t.Context(), "/o/k2")
	c := r.goGet(t.Context(), "/o/k1?v=2") // another query: another key
	for _, ch := range []<-chan result{a, b, c} {
		if res := <-ch; res.err != nil || res.resp.StatusCode != 200 || res.resp.Header.Get("Cache-Status") != "edgecache; fwd=miss" {
			t.Fatalf("client: %v %v", res.err, res.resp.Header.Get("Cache-Status"))
		}
	}
	if time.Since(start) >= 5*time.Second {
		t.Fatal("the barrier for three timed out: fewer than three fills reached the origin")
	}
}

// COL-6: the fill outlives the leader's client: the leader hangs up while
// the origin holds the fill, the follower still gets the whole object, and
// it is cached.
func TestCollapseFillOutlivesLeader(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/outlive"
	size := int64(200 << 10)
	r.put(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60"})
	r.hold(path, "outlive", rules.Action{})
	ctx, cancel := context.WithCancel(t.Context())
	lead := r.goGet(ctx, path)
	r.waitArrived(path, 1)
	base := r.server().group.Stats().Joins
	follower := r.goGet(t.Context(), path)
	r.waitJoins(base, 1)
	cancel()
	if res := <-lead; res.err == nil {
		t.Fatal("the leader's cancelled request succeeded")
	}
	r.release("outlive")
	res := <-follower
	if res.err != nil || res.resp.StatusCode != 200 || synth.Verify(synth.Object{Path: path, Size: size, Version: "1"}, 0, res.body) != nil || int64(len(res.body)) != size {
		t.Fatalf("follower: %v, %d bytes", res.err, len(res.body))
	}
	r.waitEnded(path, 1)
	r.waitLogged(path, 2)
	if resp, _ := r.get(path); resp.Header.Get("Cache-Status") != "edgecache; hit" {
		t.Fatalf("after the fill: Cache-Status %q, want a hit", resp.Header.Get("Cache-Status"))
	}
	r.originCount(path, 1)
}

// COL-7: a fill that fails before a usable response gives the leader and
// every follower the same 502, from one origin attempt.
func TestCollapseSharedFailure(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/fail"
	r.hold(path, "fail", rules.Action{Reset: &rules.Cut{}})
	const n = 5
	var chans []<-chan result
	chans = append(chans, r.goGet(t.Context(), path))
	r.waitArrived(path, 1)
	base := r.server().group.Stats().Joins
	for range n - 1 {
		chans = append(chans, r.goGet(t.Context(), path))
	}
	r.waitJoins(base, n-1)
	r.release("fail")
	statuses := map[int]int{}
	for _, ch := range chans {
		res := <-ch
		if res.err != nil {
			t.Fatal(res.err)
		}
		statuses[res.resp.StatusCode]++
	}
	if statuses[http.StatusBadGateway] != n {
		t.Fatalf("statuses %v, want %d × 502", statuses, n)
	}
	r.originCount(path, 1)
}

// CCH-1 with COL-1: the answer to a leader's request with Authorization
// that may not be stored is not shared: a follower without credentials
// gets its own origin request.
func TestCollapseAuthorizedLeaderNotShared(t *testing.T) {
	r := newRig(t, cacheConfig)
	const path = "/o/authorized"
	r.put(objects.Spec{Path: path, CacheControl: "max-age=60"})
	r.hold(path, "auth", rules.Action{})
	lead := r.goGet(t.Context(), path, "Authorization", "Bearer secret")
	r.waitArrived(path, 1)
	base := r.server().group.Stats().Joins
	follower := r.goGet(t.Context(), path)
	r.waitJoins(base, 1)
	r.release("auth")
	for _, ch := range []<-chan result{lead, follower} {
		if res := <-ch; res.err != nil || res.resp.StatusCode != 200 {
			t.Fatalf("client: %v", res.err)
		}
	}
	reqs := r.waitEnded(path, 2)
	if _, ok := header(reqs[1], "Authorization"); ok {
		t.Fatal("the follower's own request carried the leader's Authorization")
	}
	r.originCount(path, 2)
}
