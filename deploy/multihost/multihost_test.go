package multihost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/deploy/dockertest"
	"github.com/edgeconform/edgeconform/deploy/multihost"
	"github.com/edgeconform/edgeconform/emulators/emucontainer"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
	"github.com/edgeconform/edgeconform/reference/edgecontainer"
)

func TestMain(m *testing.M) {
	dockertest.Setup()
	os.Exit(m.Run())
}

// objectSize is each test object's size: several body reads, whole-object
// cached (≤ 1 MiB).
const objectSize = 256 << 10

// TestMultiHost runs the topology (two origins, one shield, three
// edges on a private network) and checks, in order, with the origins'
// journals as the evidence: one origin fill per key across all edges
// (SHD-1, COL-1 at each tier); failover to the backup within connectTimeout
// when the primary is cut off the network (TMO-1, ATT-3); and the primary
// serving again once it is back.
func TestMultiHost(t *testing.T) {
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	topo, err := multihost.Start(ctx, multihost.Options{Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := topo.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	t.Logf("topology up in %v", time.Since(start).Round(time.Millisecond))
	for _, e := range []*emucontainer.Container{topo.Primary, topo.Backup} {
		size := int64(objectSize)
		if err := e.Client().PutObjects(ctx, objects.Spec{Path: "/shd/a.ts", Size: &size}, objects.Spec{Path: "/shd/b.ts", Size: &size},
			objects.Spec{Path: "/shd/c.ts", Size: &size}); err != nil {
			t.Fatal(err)
		}
	}

	if !t.Run("SHD-1 one origin fill per key across three edges", func(t *testing.T) { testShielding(ctx, t, topo) }) {
		t.FailNow()
	}
	if !t.Run("failover when the primary leaves the network", func(t *testing.T) { testFailover(ctx, t, topo) }) {
		t.FailNow()
	}
	t.Run("primary serves again when it returns", func(t *testing.T) { testRecovery(ctx, t, topo) })
}

// testShielding sends every key to every edge at once, several clients per
// edge, while the origin holds the one fill: the origins see one request per
// key; each edge forwards one miss and each tier's other requests are
// collapsed or hits; a second round is all hits.
func testShielding(ctx context.Context, t *testing.T, topo *multihost.Topology) {
	const clientsPerEdge = 4
	keys := []string{"/shd/a.ts", "/shd/b.ts", "/shd/c.ts"}
	primary, backup := topo.Primary.Client(), topo.Backup.Client()
	for _, k := range keys {
		if _, err := primary.AddRules(ctx, rules.Rule{ID: holdName(k), Match: rules.Match{Path: k},
			Action: rules.Action{Hold: &rules.Hold{Name: holdName(k), Timeout: rules.Duration(time.Minute)}}}); err != nil {
			t.Fatal(err)
		}
	}

	type result struct {
		edge int
		key  string
		res  response
		err  error
	}
	results := make(chan result, len(keys)*len(topo.Edges)*clientsPerEdge)
	var written, done sync.WaitGroup
	for _, k := range keys {
		for i, e := range topo.Edges {
			for range clientsPerEdge {
				written.Add(1)
				done.Go(func() {
					var once sync.Once
					wrote := func() { once.Do(written.Done) }
					defer wrote()
					res, err := get(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { wrote() }}), e, k)
					results <- result{i, k, res, err}
				})
			}
		}
	}
	// Every request is on its way to an edge and each key's one fill is
	// held at the origin: let the fills go.
	written.Wait()
	for _, k := range keys {
		if _, err := primary.WaitRequests(ctx, journal.Query{PathPrefix: k}, 1); err != nil {
			t.Fatalf("waiting for the fill of %s at the primary: %v", k, err)
		}
		if _, err := primary.Release(ctx, holdName(k)); err != nil {
			t.Fatal(err)
		}
	}
	done.Wait()
	close(results)

	// Per key and edge: the edge members, and the shield member of the
	// edge's own fill (its leader's response).
	edgeMembers := map[string][][]string{}
	shieldOfLeaders := map[string][]string{}
	for r := range results {
		if r.err != nil {
			t.Fatalf("%s via edge-%d: %v", r.key, r.edge+1, r.err)
		}
		checkBody(t, r.key, r.res)
		ms := r.res.cacheStatus
		if len(ms) != 2 {
			t.Fatalf("%s via edge-%d: Cache-Status %q, want a shield member and an edge member", r.key, r.edge+1, ms)
		}
		if edgeMembers[r.key] == nil {
			edgeMembers[r.key] = make([][]string, len(topo.Edges))
		}
		edgeMembers[r.key][r.edge] = append(edgeMembers[r.key][r.edge], ms[1])
		if ms[1] == fmt.Sprintf("edge-%d; fwd=miss", r.edge+1) {
			shieldOfLeaders[r.key] = append(shieldOfLeaders[r.key], ms[0])
		}
	}
	collapsed := 0
	for _, k := range keys {
		for i, ms := range edgeMembers[k] {
			name := fmt.Sprintf("edge-%d", i+1)
			misses := 0
			for _, m := range ms {
				switch m {
				case name + "; fwd=miss":
					misses++
				case name + "; fwd=miss; collapsed":
					collapsed++
				case name + "; hit":
				default:
					t.Errorf("%s via %s: edge Cache-Status member %q", k, name, m)
				}
			}
			if misses != 1 {
				t.Errorf("%s via %s: %d responses forwarded as the edge's own miss (%q), want exactly 1", k, name, misses, ms)
			}
		}
		shieldMisses := 0
		for _, m := range shieldOfLeaders[k] {
			switch m {
			case "shield; fwd=miss":
				shieldMisses++
			case "shield; fwd=miss; collapsed", "shield; hit":
			default:
				t.Errorf("%s: shield Cache-Status member %q", k, m)
			}
		}
		if shieldMisses != 1 {
			t.Errorf("%s: the shield answered the edges' fills %q, want exactly one fwd=miss", k, shieldOfLeaders[k])
		}
	}
	t.Logf("%d requests: %d collapsed at the edges", len(keys)*len(topo.Edges)*clientsPerEdge, collapsed)

	// A second round: every edge has every key.
	for _, k := range keys {
		for i, e := range topo.Edges {
			res, err := get(ctx, e, k)
			if err != nil {
				t.Fatal(err)
			}
			checkBody(t, k, res)
			if want := fmt.Sprintf("edge-%d; hit", i+1); len(res.cacheStatus) == 0 || res.cacheStatus[len(res.cacheStatus)-1] != want {
				t.Errorf("second round, %s via edge-%d: Cache-Status %q, want last member %q", k, i+1, res.cacheStatus, want)
			}
		}
	}

	// The evidence: the origins' journals.
	for _, k := range keys {
		p := originRequests(ctx, t, primary, k)
		b := originRequests(ctx, t, backup, k)
		if len(p) != 1 || len(b) != 0 {
			t.Errorf("%s: the origins saw %d (primary) + %d (backup) requests, want exactly one fill (SHD-1)", k, len(p), len(b))
			continue
		}
		// The fill is whole (200) or the first chunk (206 to a range
		// request covering the object).
		if p[0].Host != multihost.ClientHost || (p[0].Status != http.StatusOK && p[0].Status != http.StatusPartialContent) ||
			p[0].End != "complete" || p[0].BodyBytes != objectSize {
			t.Errorf("%s: origin fill Host %q status %d end %q body %d, want Host %s (the client's), 200 or 206, complete, %d bytes",
				k, p[0].Host, p[0].Status, p[0].End, p[0].BodyBytes, multihost.ClientHost, objectSize)
		}
	}
}

// testFailover cuts the primary off the network: the shield's attempts to
// it time out after connectTimeout (no refusal, no DNS error: the packets go
// nowhere) and the backup answers.
func testFailover(ctx context.Context, t *testing.T, topo *multihost.Topology) {
	primary, backup := topo.Primary.Client(), topo.Backup.Client()
	ct := topo.Options.ConnectTimeout

	// Before: the primary answers.
	res, err := get(ctx, topo.Edges[0], "/fo/before.ts")
	if err != nil {
		t.Fatal(err)
	}
	checkBody(t, "/fo/before.ts", res)
	if p, b := len(originRequests(ctx, t, primary, "/fo/before.ts")), len(originRequests(ctx, t, backup, "/fo/before.ts")); p != 1 || b != 0 {
		t.Fatalf("before the cut: primary saw %d requests, backup %d; want 1 and 0", p, b)
	}

	before, err := topo.Shield.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := topo.Disconnect(ctx, topo.Primary); err != nil {
		t.Fatal(err)
	}
	// The first request goes over the shield's pooled h2 connection to the
	// primary (sent, never answered); the others carry a Host the shield
	// has no connection for (connections are per origin and Host, PRT), so
	// its dial's SYN goes unanswered.
	const during = 3
	for i := range during {
		path := fmt.Sprintf("/fo/during-%d.ts", i)
		host := multihost.ClientHost
		if i > 0 {
			host = fmt.Sprintf("fresh-%d.example.com", i)
		}
		res, err := getHost(ctx, topo.Edges[i%len(topo.Edges)], host, path)
		if err != nil {
			t.Fatal(err)
		}
		checkBody(t, path, res)
		// The edge's fill waited for the shield's primary attempt to time
		// out (connectTimeout), then the backup answered.
		if res.elapsed < ct || res.elapsed > ct+2*time.Second {
			t.Errorf("%s: answered after %v, want connectTimeout %v plus the backup's answer (under %v)", path, res.elapsed, ct, ct+2*time.Second)
		}
		reqs, err := backup.WaitEnded(ctx, journal.Query{PathPrefix: path}, 1)
		if err != nil {
			t.Fatalf("%s: the backup never saw it: %v", path, err)
		}
		if st := reqs[0].Status; reqs[0].Host != host || (st != http.StatusOK && st != http.StatusPartialContent) {
			t.Errorf("%s at the backup: Host %q status %d, want %s and 200 or 206", path, reqs[0].Host, st, host)
		}
		t.Logf("%s (Host %s) via edge-%d: backup answered after %v", path, host, i%len(topo.Edges)+1, res.elapsed.Round(time.Millisecond))
	}
	after, err := topo.Shield.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Every primary attempt while cut off was a connect failure that lasted
	// connectTimeout: a timeout, not a refusal.
	failures, failSeries := sumSeries(after, before, `edgecache_origin_attempts_total{origin="primary",outcome="connect_failure`)
	if failures != during {
		t.Errorf("shield: %v primary connect failures while cut off (%v), want %d", failures, failSeries, during)
	}
	if ok, _ := sumSeries(after, before, `edgecache_origin_attempts_total{origin="primary",outcome="usable"}`); ok != 0 {
		t.Errorf("shield: %v usable primary attempts while it was cut off", ok)
	}
	n, _ := sumSeries(after, before, `edgecache_origin_attempt_duration_seconds_count{origin="primary"}`)
	sum, _ := sumSeries(after, before, `edgecache_origin_attempt_duration_seconds_sum{origin="primary"}`)
	if n != during || sum/n < ct.Seconds()*0.95 || sum/n > ct.Seconds()+0.5 {
		t.Errorf("shield: %v primary attempts averaging %.3fs, want %d lasting connectTimeout %v", n, sum/n, during, ct)
	}
	t.Logf("shield: primary attempts %v, mean %.3fs (connectTimeout %v)", failSeries, sum/n, ct)
	// The shield's log says why each primary attempt failed: never a
	// refusal or a name that did not resolve.
	// edgecache writes its log asynchronously (batches at least every
	// 100 ms), so the records of the last attempts may come a moment after
	// the responses: read the log until every attempt is in it.
	var reasons, bad []string
	for deadline := time.Now().Add(5 * time.Second); ; {
		logs, err := topo.Shield.LogText(ctx)
		if err != nil {
			t.Fatal(err)
		}
		reasons, bad = primaryConnectFailures(logs, ct)
		if len(reasons) >= during || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, b := range bad {
		t.Errorf("shield log: primary attempt failed after %s, want a connect timeout", b)
	}
	if len(reasons) != during {
		t.Errorf("shield log: %d primary connect failures (%q), want %d", len(reasons), reasons, during)
	}
	t.Logf("shield log, primary attempts: %q", reasons)
	// (The primary's control API is unreachable while it is off the
	// network: its published ports go with it.)
}

// primaryConnectFailures are the shield's origin attempt records of
// connect failures at the primary, and those of them that were not a
// connect timeout (a refusal, a name that did not resolve, too early).
func primaryConnectFailures(logs string, ct time.Duration) (reasons, bad []string) {
	for line := range strings.Lines(logs) {
		var rec struct {
			Msg, Origin, Outcome, Err string
			LatencyMS                 int64 `json:"latency_ms"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "origin attempt" || rec.Origin != "primary" || !strings.HasPrefix(rec.Outcome, "connect_failure") {
			continue
		}
		reasons = append(reasons, fmt.Sprintf("%dms: %s", rec.LatencyMS, rec.Err))
		if strings.Contains(rec.Err, "refused") || strings.Contains(rec.Err, "no such host") || rec.LatencyMS < ct.Milliseconds() {
			bad = append(bad, fmt.Sprintf("%dms with %q", rec.LatencyMS, rec.Err))
		}
	}
	return reasons, bad
}

// testRecovery puts the primary back at its address: the next fills go to
// it again, without waiting for a timeout.
func testRecovery(ctx context.Context, t *testing.T, topo *multihost.Topology) {
	if err := topo.Reconnect(ctx, topo.Primary); err != nil {
		t.Fatal(err)
	}
	primary, backup := topo.Primary.Client(), topo.Backup.Client() // new host ports
	before, err := topo.Shield.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const after = 3
	for i := range after {
		path := fmt.Sprintf("/fo/after-%d.ts", i)
		res, err := get(ctx, topo.Edges[i%len(topo.Edges)], path)
		if err != nil {
			t.Fatal(err)
		}
		checkBody(t, path, res)
		if p, b := len(originRequests(ctx, t, primary, path)), len(originRequests(ctx, t, backup, path)); p != 1 || b != 0 {
			t.Errorf("%s after the primary returned: primary saw %d requests, backup %d; want 1 and 0", path, p, b)
		}
		t.Logf("%s via edge-%d: primary answered after %v", path, i%len(topo.Edges)+1, res.elapsed.Round(time.Millisecond))
	}
	// No attempt failed on the way: the first one after the return went to
	// the primary and was usable.
	m, err := topo.Shield.Metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	usable, _ := sumSeries(m, before, `edgecache_origin_attempts_total{origin="primary",outcome="usable"}`)
	all, per := sumSeries(m, before, `edgecache_origin_attempts_total{`)
	if usable != after || all != after {
		t.Errorf("shield: attempts after the primary returned %v, want %d usable primary attempts and nothing else", per, after)
	}
	// The request the shield wrote on its pooled connection while the
	// primary was away may still arrive by TCP retransmission, though the
	// connection was retired (evidence only).
	late := originRequests(ctx, t, primary, "/fo/during-")
	t.Logf("the primary journaled %d requests from while it was away, delivered late by TCP retransmission", len(late))
}

// holdName names the barrier holding a key's fill at the origin.
func holdName(key string) string { return "hold" + strings.ReplaceAll(key, "/", "_") }

// response is what a test keeps of one.
type response struct {
	status      int
	body        []byte
	cacheStatus []string // RFC 9211 members, origin side first
	elapsed     time.Duration
}

func get(ctx context.Context, e *edgecontainer.Container, path string) (response, error) {
	return getHost(ctx, e, multihost.ClientHost, path)
}

// getHost is get with another Host.
func getHost(ctx context.Context, e *edgecontainer.Container, host, path string) (response, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.URL+path, nil)
	if err != nil {
		return response{}, err
	}
	req.Host = host
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("GET %s: reading the body: %w", path, err)
	}
	r := response{status: resp.StatusCode, body: body, elapsed: time.Since(start)}
	for _, v := range resp.Header.Values("Cache-Status") {
		for m := range strings.SplitSeq(v, ",") {
			r.cacheStatus = append(r.cacheStatus, strings.TrimSpace(m))
		}
	}
	return r, nil
}

func checkBody(t *testing.T, path string, r response) {
	t.Helper()
	size := int64(objectSize)
	if !strings.HasPrefix(path, "/shd/") {
		size = 1024 // the emulator's default synthetic object
	}
	if r.status != http.StatusOK {
		t.Fatalf("%s: status %d, want 200", path, r.status)
	}
	if err := synth.Verify(synth.Object{Path: path, Size: size, Version: "1"}, 0, r.body); err != nil || int64(len(r.body)) != size {
		t.Fatalf("%s: body of %d bytes (want %d): %v", path, len(r.body), size, err)
	}
}

type journalClient interface {
	Journal(context.Context, journal.Query) (journal.Snapshot, error)
}

func originRequests(ctx context.Context, t *testing.T, c journalClient, prefix string) []journal.Request {
	t.Helper()
	snap, err := c.Journal(ctx, journal.Query{PathPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return snap.Requests
}

// sumSeries adds up the change of every series starting with prefix.
func sumSeries(after, before map[string]float64, prefix string) (float64, map[string]float64) {
	var total float64
	per := map[string]float64{}
	for k, v := range after {
		if strings.HasPrefix(k, prefix) {
			if d := v - before[k]; d != 0 {
				per[k] = d
				total += d
			}
		}
	}
	return total, per
}

// testWriter sends the topology's log to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
