//go:build soak

package soak

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/template"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

var (
	flagDuration = flag.Duration("soak.duration", envDuration("EDGECONFORM_SOAK_DURATION", 60*time.Second), "how long the faulty load runs (env EDGECONFORM_SOAK_DURATION)")
	flagClients  = flag.Int("soak.clients", 64, "concurrent clients, each on its own connection")
	flagCacheMiB = flag.Int("soak.cache-mib", 64, "the edge's --cache-size in MiB")
	flagObjects  = flag.Int("soak.objects", 120, "objects, sizes log-uniform in 1 KiB..5 MiB, half behind each origin")
	flagProfile  = flag.String("soak.heap-profile", os.Getenv("EDGECONFORM_SOAK_HEAP_PROFILE"), "write the edge's heap profile at the live-heap peak to this file")
	flagEdgeArgs = flag.String("soak.edge-args", "", "extra edgecache serve arguments, space-separated (e.g. --memory-limit=off)")
	flagSeed     = flag.Uint64("soak.seed", uint64(time.Now().UnixNano()), "random seed (printed)")
)

func envDuration(name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}

const (
	minSize, maxSize = 1 << 10, 5 << 20
	chunkSize        = 2 << 20 // the edge's fill chunk
	ttl              = 2 * time.Second
	readTimeout      = time.Second // the origins' readTimeout: ends stalls
	perConnBudget    = 64 << 10    // issue #12 item 5: per open client connection
	fixedBudget      = 64 << 20
)

const edgeConfig = `
origins:
  - name: h1
    originAddress: origin.test
    protocol: HTTP
    port: {{.H1}}
    maxAttempts: 2
    retryConditions: [CONNECT_FAILURE, HTTP_5XX]
    timeout: {connectTimeout: 2s, readTimeout: {{.Read}}, responseTimeout: 20s, maxAttemptsTimeout: 10s}
  - name: h2
    originAddress: origin.test
    protocol: HTTP2
    port: {{.H2}}
    maxAttempts: 2
    retryConditions: [CONNECT_FAILURE, HTTP_5XX]
    timeout: {connectTimeout: 2s, readTimeout: {{.Read}}, responseTimeout: 20s, maxAttemptsTimeout: 10s}
service:
  name: soak
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: m}]
    pathMatchers:
      - name: m
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /h1/}], origin: h1, routeAction: {cdnPolicy: {cacheMode: FORCE_CACHE_ALL, defaultTtl: {{.TTL}}}}}
          - {priority: 2, matchRules: [{prefixMatch: /h2/}], origin: h2, routeAction: {cdnPolicy: {cacheMode: FORCE_CACHE_ALL, defaultTtl: {{.TTL}}}}}
`

// object is one path's current state; versions maps every ETag the path
// ever had to its content.
type object struct {
	path string
	size int64
	mu   sync.Mutex
	ver  int
}

type catalog struct {
	objs []*object
	mu   sync.RWMutex
	tags map[string]synth.Object // ETag -> content, every version ever put
}

func (c *catalog) byETag(tag string) (synth.Object, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, ok := c.tags[tag]
	return o, ok
}

// put makes version v of o current at the origin (known before it is
// served).
func (c *catalog) put(e *originemu.Emulator, o *object, v int) error {
	so := synth.Object{Path: o.path, Size: o.size, Version: strconv.Itoa(v)}
	c.mu.Lock()
	c.tags[so.ETag()] = so
	c.mu.Unlock()
	size := o.size
	return e.PutObjects(objects.Spec{Path: o.path, Size: &size, Version: so.Version})
}

// tally counts outcomes; every field is updated atomically.
type tally struct {
	requests, complete, truncated, errStatus, noResponse, other, wrong atomic.Int64

	mu       sync.Mutex
	statuses map[string]int // of the error statuses
}

func (t *tally) status(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.statuses == nil {
		t.statuses = map[string]int{}
	}
	t.statuses[s]++
}

type outcome int

const (
	complete outcome = iota
	truncated
	errStatus
	noResponse
	other
	wrong
)

func (t *tally) add(o outcome) {
	[]*atomic.Int64{&t.complete, &t.truncated, &t.errStatus, &t.noResponse, &t.other, &t.wrong}[o].Add(1)
	t.requests.Add(1)
}

// verifier checks a body against o from off as it streams.
type verifier struct {
	o   synth.Object
	off int64
	n   int64
	err error
}

func (v *verifier) Write(p []byte) (int, error) {
	if v.err == nil {
		v.err = synth.Verify(v.o, v.off+v.n, p)
	}
	v.n += int64(len(p))
	return len(p), nil
}

type soak struct {
	t       *testing.T
	edgeURL string
	cat     *catalog
	wrongs  atomic.Int64 // details logged for the first few
}

// get asks for o whole or (rng permitting) a range, reads the whole
// response and classifies it.
func (s *soak) get(ctx context.Context, cl *http.Client, o *object, rng *rand.Rand) (outcome, string) {
	req, _ := http.NewRequestWithContext(ctx, "GET", s.edgeURL+o.path, nil)
	var start, end int64 = 0, o.size - 1
	if rng != nil && rng.IntN(2) == 0 && o.size > 1 {
		start = rng.Int64N(o.size)
		end = min(o.size-1, start+rng.Int64N(3<<20))
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", start, end))
	}
	resp, err := cl.Do(req)
	if err != nil {
		return noResponse, err.Error()
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		io.Copy(io.Discard, resp.Body)
		return errStatus, resp.Status
	case resp.StatusCode != 200 && resp.StatusCode != 206:
		io.Copy(io.Discard, resp.Body)
		return other, resp.Status
	}
	so, known := s.cat.byETag(resp.Header.Get("ETag"))
	if resp.StatusCode == 206 {
		var a, b, total int64
		if _, err := fmt.Sscanf(resp.Header.Get("Content-Range"), "bytes %d-%d/%d", &a, &b, &total); err != nil {
			return wrong, "206 with Content-Range " + resp.Header.Get("Content-Range")
		}
		if a != start || b != end || total != o.size {
			return wrong, fmt.Sprintf("asked bytes=%d-%d of %d, got Content-Range %s", start, end, o.size, resp.Header.Get("Content-Range"))
		}
	} else {
		start, end = 0, o.size-1
	}
	v := &verifier{o: so, off: start}
	_, err = io.Copy(v, resp.Body)
	switch {
	case err != nil || v.n != resp.ContentLength:
		return truncated, fmt.Sprintf("%v after %d of %d bytes", err, v.n, resp.ContentLength)
	case !known:
		return wrong, fmt.Sprintf("complete %d with an ETag %q never served by the origin", resp.StatusCode, resp.Header.Get("ETag"))
	case v.n != end-start+1:
		return wrong, fmt.Sprintf("complete %d of %d bytes, want %d", resp.StatusCode, v.n, end-start+1)
	case v.err != nil:
		return wrong, fmt.Sprintf("complete %d (%s, Cache-Status %q): %v", resp.StatusCode, resp.Header.Get("ETag"), resp.Header.Get("Cache-Status"), v.err)
	}
	return complete, ""
}

func (s *soak) record(t *tally, o *object, out outcome, detail string) {
	t.add(out)
	if out == errStatus {
		t.status(o.path[:3] + " " + detail)
	}
	if out == wrong && s.wrongs.Add(1) <= 10 {
		s.t.Errorf("silently wrong: %s: %s", o.path, detail)
	}
}

// TestSoak is the fault-load soak (see the package doc).
func TestSoak(t *testing.T) {
	seed := *flagSeed
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d (-soak.seed to repeat), %v, %d clients, cache %d MiB, %d objects", seed, *flagDuration, *flagClients, *flagCacheMiB, *flagObjects)

	emu, err := originemu.Start(context.Background(), originemu.Config{
		Listeners:       []originemu.ListenerConfig{{Name: "h1", Profile: originemu.HTTP}, {Name: "h2", Profile: originemu.H2}},
		JournalCapacity: 100000,
		Logger:          slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()

	cat := &catalog{tags: map[string]synth.Object{}}
	for i := range *flagObjects {
		size := int64(math.Exp(math.Log(minSize) + rng.Float64()*(math.Log(maxSize)-math.Log(minSize))))
		if i%10 == 0 {
			size = maxSize // several multi-chunk objects always
		}
		o := &object{path: fmt.Sprintf("/h%d/obj%03d", 1+i%2, i), size: size, ver: 1}
		if err := cat.put(emu, o, 1); err != nil {
			t.Fatal(err)
		}
		cat.objs = append(cat.objs, o)
	}

	edge := startEdge(t, emu)
	s := &soak{t: t, edgeURL: edge.url, cat: cat}
	origin := &originTally{counted: map[uint64]bool{}}

	// The faulty load.
	var load tally
	loadCtx, stopLoad := context.WithTimeout(context.Background(), *flagDuration)
	defer stopLoad()
	var wg sync.WaitGroup
	for c := range *flagClients {
		wg.Go(func() {
			crng := rand.New(rand.NewPCG(seed, uint64(c)+2))
			cl := newClient()
			defer cl.CloseIdleConnections()
			for loadCtx.Err() == nil {
				o := cat.objs[crng.IntN(len(cat.objs))]
				ctx, cancel := context.WithTimeout(loadCtx, 60*time.Second)
				out, detail := s.get(ctx, cl, o, crng)
				cancel()
				if loadCtx.Err() != nil && out != complete && out != wrong {
					break // cut by the end of the phase, not the edge
				}
				s.record(&load, o, out, detail)
			}
		})
	}
	faults := &faulter{t: t, emu: emu, cat: cat, rng: rand.New(rand.NewPCG(seed, 0)), ids: map[string]bool{}}
	wg.Go(func() { faults.run(loadCtx) })
	wg.Go(func() { changeVersions(loadCtx, t, emu, cat, rand.New(rand.NewPCG(seed, 1<<40))) })
	wg.Go(func() { edge.sample(loadCtx) })
	wg.Go(func() { every(loadCtx, 500*time.Millisecond, func() { origin.scan(emu.Journal(), faults) }) })
	wg.Wait()

	// Faults stop: no rule left; wait for the origin to finish what is in
	// flight (stalls end at the edge's readTimeout), then let every entry
	// expire so the edge revalidates, and read everything again.
	emu.DeleteRules()
	settle(t, emu.Journal())
	time.Sleep(ttl + 200*time.Millisecond)
	var after tally
	work := make(chan *object)
	var awg sync.WaitGroup
	for c := range 8 {
		awg.Go(func() {
			cl := newClient()
			defer cl.CloseIdleConnections()
			crng := rand.New(rand.NewPCG(seed, 1<<20+uint64(c)))
			for o := range work {
				for _, r := range []*rand.Rand{nil, crng} {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					out, detail := s.get(ctx, cl, o, r)
					cancel()
					after.add(out)
					if out != complete {
						t.Errorf("after the faults stopped: %s: outcome %d: %s", o.path, out, detail)
					}
				}
			}
		})
	}
	for _, o := range cat.objs {
		work <- o
	}
	close(work)
	awg.Wait()
	origin.scan(emu.Journal(), faults)
	edge.sampleOnce()
	hwm := edge.hwm()

	wrongAfter := after.requests.Load() - after.complete.Load()
	budget := int64(*flagCacheMiB)<<20 + fixedBudget + int64(*flagClients)*perConnBudget
	fmt.Printf("soak: %v, %d clients, cache %d MiB, %d objects (1 KiB-5 MiB), seed %d\n", *flagDuration, *flagClients, *flagCacheMiB, len(cat.objs), seed)
	fmt.Printf("  requests          %d\n", load.requests.Load())
	fmt.Printf("  faults injected   %d (fills hit by a fault rule, of %d origin requests)\n", origin.faults, origin.reqs)
	fmt.Printf("  complete          %d\n", load.complete.Load())
	fmt.Printf("  visibly truncated %d\n", load.truncated.Load())
	fmt.Printf("  error status      %d (5xx: %v)\n", load.errStatus.Load(), load.statuses)
	fmt.Printf("  no response       %d (closed or reset before headers)\n", load.noResponse.Load())
	fmt.Printf("  other status      %d\n", load.other.Load())
	fmt.Printf("  silently wrong    %d\n", load.wrong.Load())
	fmt.Printf("  wrong after faults stop %d (of %d)\n", wrongAfter, after.requests.Load())
	fmt.Printf("  version changes   %d\n", len(cat.tags)-len(cat.objs))
	fmt.Printf("  edge peak RSS     %d MiB (VmHWM; budget %d MiB = cache + 64 MiB + 64 KiB x %d connections)\n", hwm>>20, budget>>20, *flagClients)
	fmt.Printf("  edge RSS at end   %d MiB; peak heap in use %d MiB\n", edge.lastRSS.Load()>>20, edge.peakHeap.Load()>>20)
	fmt.Printf("  origin bytes      %d MiB (journal dropped %d)\n", origin.bytes>>20, origin.dropped)
	fmt.Printf("  origin connections h1 %d, h2 %d\n", len(emu.Journal().Query(journal.Query{Listener: "h1"}).Conns), len(emu.Journal().Query(journal.Query{Listener: "h2"}).Conns))
	if load.wrong.Load() != 0 {
		t.Errorf("%d responses silently wrong", load.wrong.Load())
	}
	if wrongAfter != 0 {
		t.Errorf("%d responses wrong after the faults stopped", wrongAfter)
	}
	if hwm > budget {
		t.Errorf("edge peak RSS %d MiB over the budget %d MiB", hwm>>20, budget>>20)
	}
	if load.complete.Load() == 0 {
		t.Error("no complete response at all")
	}
}

// newClient is one client: one keep-alive connection to the edge.
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true}}
}

// settle waits until the origin has no request in flight but stalled
// ones the edge gave up on long ago: the emulator's HTTP/1.1 stall does not
// notice a client closing the connection, so those stay "pending" in its
// journal although the edge holds no connection for them (its open files
// show none).
func settle(t *testing.T, j *journal.Journal) {
	deadline := time.Now().Add(5*readTimeout + 5*time.Second)
	for {
		var left []journal.Request
		for _, r := range j.Query(journal.Query{}).Requests {
			if r.End == journal.EndPending && time.Since(r.Arrived) < 5*readTimeout {
				left = append(left, r)
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, r := range left {
				t.Logf("the origin still has a request in flight after the faults stopped: %s %s %s range %q rule %q, %d bytes sent, since %v",
					r.Listener, r.Proto, r.Path, r.Range, r.Rule, r.BodyBytes, time.Since(r.Arrived).Round(time.Millisecond))
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// faulter adds one-shot fault rules on random objects, keeping a few
// armed at a time.
type faulter struct {
	t   *testing.T
	emu *originemu.Emulator
	cat *catalog
	rng *rand.Rand
	mu  sync.Mutex
	ids map[string]bool // fault rule ids
}

func (f *faulter) isFault(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ids[id]
}

func (f *faulter) run(ctx context.Context) { every(ctx, 10*time.Millisecond, f.arm) }

// arm adds a fault rule unless enough are armed.
func (f *faulter) arm() {
	const armed = 24
	live := 0
	for _, st := range f.emu.Rules() {
		if st.Exhausted {
			f.emu.DeleteRule(st.ID)
		} else {
			live++
		}
	}
	if live >= armed {
		return
	}
	o := f.cat.objs[f.rng.IntN(len(f.cat.objs))]
	at := f.rng.Int64N(min(o.size, chunkSize))
	cut := &rules.Cut{AfterBytes: &at}
	var a rules.Action
	kinds := 4
	if strings.HasPrefix(o.path, "/h2/") {
		kinds = 7
	}
	switch f.rng.IntN(kinds) {
	case 0:
		a.Truncate = cut
	case 1:
		if f.rng.IntN(2) == 0 {
			cut = &rules.Cut{}
		}
		a.Reset = cut
	case 2:
		a.Stall = cut
	case 3:
		a.Status = 503
	case 4:
		a.RSTStream = &rules.Cut{AfterBytes: &at, Code: "INTERNAL_ERROR"}
	case 5:
		a.GoAway = &rules.Cut{AfterBytes: &at, Code: "NO_ERROR"}
	case 6:
		a.GoAway = &rules.Cut{Code: "INTERNAL_ERROR"}
	}
	added, err := f.emu.AddRules(rules.Rule{Match: rules.Match{Path: o.path}, Times: 1, Action: a})
	if err != nil {
		f.t.Errorf("adding a fault rule: %v", err)
		return
	}
	f.mu.Lock()
	f.ids[added[0].ID] = true
	f.mu.Unlock()
}

// changeVersions changes a random object's version every 300 ms.
func changeVersions(ctx context.Context, t *testing.T, emu *originemu.Emulator, cat *catalog, rng *rand.Rand) {
	every(ctx, 300*time.Millisecond, func() {
		o := cat.objs[rng.IntN(len(cat.objs))]
		o.mu.Lock()
		o.ver++
		v := o.ver
		o.mu.Unlock()
		if err := cat.put(emu, o, v); err != nil {
			t.Errorf("a new version of %s: %v", o.path, err)
		}
	})
}

// every calls f every d until ctx ends.
func every(ctx context.Context, d time.Duration, f func()) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f()
		}
	}
}

// originTally sums what the origin sent, scanning the journal as it goes
// (it is bounded, so it is read while the load runs).
type originTally struct {
	cursor  uint64
	counted map[uint64]bool
	reqs    int64
	bytes   int64
	faults  int64
	dropped uint64
}

func (o *originTally) scan(j *journal.Journal, f *faulter) {
	s := j.Query(journal.Query{AfterSeq: o.cursor})
	o.dropped = s.Dropped
	cursor, pending := o.cursor, false
	for _, r := range s.Requests {
		if r.End == journal.EndPending {
			pending = true
			continue
		}
		if !o.counted[r.Seq] {
			o.counted[r.Seq] = true
			o.reqs++
			o.bytes += r.BodyBytes
			if r.Rule != "" && f.isFault(r.Rule) {
				o.faults++
			}
		}
		if !pending {
			cursor = r.Seq
		}
	}
	for seq := range o.counted {
		if seq <= cursor {
			delete(o.counted, seq)
		}
	}
	o.cursor = cursor
}

// edgeProc is `edgecache serve` running as a child process.
type edgeProc struct {
	t        *testing.T
	cmd      *exec.Cmd
	url      string
	admin    string
	lastRSS  atomic.Int64
	peakHeap atomic.Int64
	logFile  string
}

func startEdge(t *testing.T, emu *originemu.Emulator) *edgeProc {
	dir := t.TempDir()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	bin := filepath.Join(dir, "edgecache")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./reference/cmd/edgecache")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building edgecache: %v\n%s", err, out)
	}
	port := func(name string) string { _, p, _ := net.SplitHostPort(emu.Addr(name)); return p }
	var cfg bytes.Buffer
	template.Must(template.New("cfg").Parse(edgeConfig)).Execute(&cfg, map[string]string{
		"H1": port("h1"), "H2": port("h2"), "Read": readTimeout.String(), "TTL": ttl.String()})
	cfgFile := filepath.Join(dir, "edge.yaml")
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(cfgFile, cfg.Bytes(), 0o644)
	os.WriteFile(caFile, emu.CAPEM(), 0o644)
	e := &edgeProc{t: t, logFile: filepath.Join(dir, "edge.log")}
	logf, err := os.Create(e.logFile)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--config", cfgFile, "--lab", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
		"--origin-ca", caFile, "--resolve", "origin.test=127.0.0.1", "--cache-size", fmt.Sprintf("%dMiB", *flagCacheMiB)}
	e.cmd = exec.Command(bin, append(args, strings.Fields(*flagEdgeArgs)...)...)
	e.cmd.Stderr = logf
	stdout, _ := e.cmd.StdoutPipe()
	if err := e.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.cmd.Process.Kill()
		e.cmd.Wait()
		logf.Close()
		if t.Failed() {
			e.tailLog()
		}
		if keep := os.Getenv("EDGECONFORM_SOAK_KEEP_LOG"); keep != "" {
			b, _ := os.ReadFile(e.logFile)
			os.WriteFile(keep, b, 0o644)
		}
	})
	sc := bufio.NewScanner(stdout)
	for (e.url == "" || e.admin == "") && sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
			e.url = u
		}
		if u, ok := strings.CutPrefix(sc.Text(), "admin "); ok {
			e.admin = u
		}
	}
	if e.url == "" || e.admin == "" {
		t.Fatalf("edgecache did not start; its log:\n%s", readTail(e.logFile))
	}
	go io.Copy(io.Discard, stdout)
	return e
}

func (e *edgeProc) tailLog() { e.t.Logf("edge log tail:\n%s", readTail(e.logFile)) }

func readTail(file string) string {
	b, _ := os.ReadFile(file)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// procStatus reads a field of /proc/PID/status in bytes.
func (e *edgeProc) procStatus(field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", e.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// hwm is the edge's peak RSS so far (VmHWM).
func (e *edgeProc) hwm() int64 { return e.procStatus("VmHWM") }

// sample follows the edge's RSS and heap until ctx ends.
func (e *edgeProc) sample(ctx context.Context) { every(ctx, time.Second, e.sampleOnce) }

func (e *edgeProc) sampleOnce() {
	e.lastRSS.Store(e.procStatus("VmRSS"))
	resp, err := http.Get(e.admin + "/debug/pprof/heap?debug=1")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapInuse = "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			if n > e.peakHeap.Load() {
				e.peakHeap.Store(n)
				if *flagProfile != "" {
					e.saveProfile(*flagProfile)
				}
			}
		}
	}
}

func (e *edgeProc) saveProfile(file string) {
	resp, err := http.Get(e.admin + "/debug/pprof/heap")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		return
	}
	defer f.Close()
	io.Copy(f, resp.Body)
}
