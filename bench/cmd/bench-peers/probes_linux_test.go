package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// probeOrigin serves /pass/N and /hit/N as N bytes with Content-Length,
// /chunked without it, and counts requests and connections.
func probeOrigin(t *testing.T) (*httptest.Server, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	var reqs, conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		if r.URL.Path == "/chunked" {
			w.Write([]byte("part one"))
			w.(http.Flusher).Flush()
			w.Write([]byte("part two"))
			return
		}
		n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/pass/"), "/hit/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Write(pattern(n))
	}))
	// A probe that forwards a head whose body never follows leaves a
	// request waiting for it: the read timeout ends it, so that Close does
	// not wait forever and the test fails rather than hangs.
	srv.Config.ReadTimeout = 5 * time.Second
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &reqs, &conns
}

// probe is what the tests start: the epoll probe or the goroutine probe.
type probe interface {
	Addr() string
	run(ctx context.Context) error
}

// probeKinds are the probes, by their name in the tables; each test runs
// against both, which share one contract.
var probeKinds = []struct {
	name string
	make func(listen, origin string) (probe, error)
}{
	{probeName, func(l, o string) (probe, error) { return newEpollProbe(l, o) }},
	{goProbeName, func(l, o string) (probe, error) { return newGoProbe(l, o) }},
}

func startTestProbe(t *testing.T, kind func(listen, origin string) (probe, error), origin string) string {
	t.Helper()
	p, err := kind("127.0.0.1:0", origin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("probe run: %v", err)
			}
		case <-time.After(10 * waitMillis * time.Millisecond):
			t.Errorf("probe still running %d ms after its context ended (waits are %d ms)", 10*waitMillis, waitMillis)
		}
	})
	return p.Addr()
}

// The probes pass whole bodies (small, and larger than its read buffer
// and the sockets' buffers), each request reaching the origin once, over
// reused origin connections.
func TestProbesProxyWholeBodies(t *testing.T) { forEachProbe(t, testProxiesWholeBodies) }

func testProxiesWholeBodies(t *testing.T, kind func(listen, origin string) (probe, error)) {
	origin, reqs, conns := probeOrigin(t)
	addr := startTestProbe(t, kind, strings.TrimPrefix(origin.URL, "http://"))
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	sizes := []int{1 << 10, 200 << 10, 0, 64 << 10, 7}
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := sizes[(w+i)%len(sizes)]
				resp, err := client.Get(fmt.Sprintf("http://%s/pass/%d", addr, n))
				if err != nil {
					errs <- err
					continue
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case err != nil:
					errs <- fmt.Errorf("/pass/%d: reading: %w", n, err)
				case resp.StatusCode != http.StatusOK || !bytes.Equal(b, pattern(n)):
					errs <- fmt.Errorf("/pass/%d: %d with %d bytes, want 200 with the %d bytes the origin sent", n, resp.StatusCode, len(b), n)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := reqs.Load(); got != workers*each {
		t.Errorf("the origin saw %d requests for %d sent", got, workers*each)
	}
	if got := conns.Load(); got > workers {
		t.Errorf("the origin saw %d connections for %d clients: the probe does not reuse them", got, workers)
	}
}

// The goroutine probe keeps the first 200 response to a GET of a /hit/
// target and answers later GETs of it from memory, whole; nothing else
// (a 404, a query, a /pass/ target, a target beyond goProbeMaxHits) is
// kept.
func TestGoProbeCachesHits(t *testing.T) {
	origin, reqs, _ := probeOrigin(t)
	addr := startTestProbe(t, func(l, o string) (probe, error) { return newGoProbe(l, o) }, strings.TrimPrefix(origin.URL, "http://"))
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func(path string, n int, want int) error {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			return fmt.Errorf("%s: reading: %w", path, err)
		case resp.StatusCode != want:
			return fmt.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		case want == http.StatusOK && (!bytes.Equal(b, pattern(n)) || resp.ContentLength != int64(n)):
			return fmt.Errorf("%s: %d bytes (Content-Length %d), want the origin's %d", path, len(b), resp.ContentLength, n)
		}
		return nil
	}
	for _, tc := range []struct {
		path      string
		size      int
		status    int
		originFor int64 // origin requests for 1 + 16 GETs
	}{
		{"/hit/1024", 1024, http.StatusOK, 1},
		{"/hit/204800", 200 << 10, http.StatusOK, 1}, // beyond the read buffer and the sockets' buffers
		{"/hit/1024?v=1", 1024, http.StatusOK, 17},
		{"/hit/missing", 0, http.StatusNotFound, 17},
		{"/pass/1024", 1024, http.StatusOK, 17},
	} {
		before := reqs.Load()
		if err := get(tc.path, tc.size, tc.status); err != nil { // the first: a miss
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for range 16 {
			wg.Go(func() { errs <- get(tc.path, tc.size, tc.status) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		if got := reqs.Load() - before; got != tc.originFor {
			t.Errorf("%s: the origin saw %d requests for 17 GETs, want %d", tc.path, got, tc.originFor)
		}
	}
	// Two targets are kept; fill the rest, then one more is proxied each time.
	for i := range goProbeMaxHits - 2 {
		if err := get(fmt.Sprintf("/hit/%d", 2000+i), 2000+i, http.StatusOK); err != nil {
			t.Fatal(err)
		}
	}
	before := reqs.Load()
	for range 2 {
		if err := get("/hit/7", 7, http.StatusOK); err != nil {
			t.Fatal(err)
		}
		if err := get("/hit/2000", 2000, http.StatusOK); err != nil { // kept
			t.Fatal(err)
		}
	}
	if got := reqs.Load() - before; got != 2 {
		t.Errorf("beyond %d kept targets: the origin saw %d requests for 2 GETs of a new target and 2 of a kept one, want 2", goProbeMaxHits, got)
	}
}

// What a probe cannot pass on whole (a response without Content-Length,
// a method other than GET, a GET with a body) ends the client's connection: never a body
// taken for a whole one.
func TestProbesRefuseWhatTheyCannotPassWhole(t *testing.T) {
	forEachProbe(t, testRefusesWhatItCannotPassWhole)
}

func testRefusesWhatItCannotPassWhole(t *testing.T, kind func(listen, origin string) (probe, error)) {
	origin, _, _ := probeOrigin(t)
	addr := startTestProbe(t, kind, strings.TrimPrefix(origin.URL, "http://"))
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for _, c := range []struct {
		name string
		do   func() (*http.Response, error)
	}{
		{"chunked origin response", func() (*http.Response, error) { return client.Get("http://" + addr + "/chunked") }},
		{"POST", func() (*http.Response, error) {
			return client.Post("http://"+addr+"/pass/10", "text/plain", strings.NewReader("x"))
		}},
		{"GET with a body", func() (*http.Response, error) {
			// Its body would otherwise be taken for the next request's head.
			req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/pass/10", strings.NewReader("GET /pass/20 HTTP/1.1\r\nHost: x\r\n\r\n"))
			if err != nil {
				return nil, err
			}
			return client.Do(req)
		}},
	} {
		resp, err := c.do()
		switch ne := (net.Error)(nil); {
		case err == nil:
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("%s: got %d with %q, want the connection closed", c.name, resp.StatusCode, b)
		case errors.As(err, &ne) && ne.Timeout():
			t.Errorf("%s: the client timed out (%v), want the connection closed", c.name, err)
		}
	}
}

// A bad origin address is refused, naming it (the epoll probe takes IPv4
// only).
func TestProbesBadOrigin(t *testing.T) {
	for _, k := range probeKinds {
		bad := []string{"no-port"}
		if k.name == probeName {
			bad = append(bad, "[::1]:80")
		}
		for _, origin := range bad {
			_, err := k.make("127.0.0.1:0", origin)
			if err == nil || !strings.Contains(err.Error(), origin) {
				t.Errorf("%s, origin %q: err %v, want one naming it", k.name, origin, err)
			}
		}
	}
}

// forEachProbe runs test against each probe.
func forEachProbe(t *testing.T, test func(t *testing.T, kind func(listen, origin string) (probe, error))) {
	for _, k := range probeKinds {
		t.Run(k.name, func(t *testing.T) { test(t, k.make) })
	}
}

// An origin refusing the connection ends the client's.
func TestProbesOriginRefuses(t *testing.T) { forEachProbe(t, testOriginRefuses) }

func testOriginRefuses(t *testing.T, kind func(listen, origin string) (probe, error)) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String()
	ln.Close()
	addr := startTestProbe(t, kind, refused)
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/pass/10")
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got %d through a probe whose origin refuses, want the connection closed", resp.StatusCode)
	}
	if ne := (net.Error)(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("the client timed out (%v); the probe should have closed its connection", err)
	}
}

// An origin that closed an idle connection (its keep-alive timeout) does
// not fail the next request: the probes do not hand it a dead connection.
func TestProbesOriginClosesIdle(t *testing.T) { forEachProbe(t, testOriginClosesIdle) }

func testOriginClosesIdle(t *testing.T, kind func(listen, origin string) (probe, error)) {
	origin, reqs, _ := probeOrigin(t)
	addr := startTestProbe(t, kind, strings.TrimPrefix(origin.URL, "http://"))
	get := func(i int) {
		t.Helper()
		// A new client connection per request (net/http would resend a
		// GET that failed on a reused one, and hide a probe's failure),
		// without Connection: close (the probe would pass it on, and the
		// origin would not keep the connection).
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		resp, err := client.Get(fmt.Sprintf("http://%s/pass/%d", addr, 100+i))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(b, pattern(100+i)) {
			t.Fatalf("request %d: %d bytes, %v", i, len(b), err)
		}
	}
	get(1)
	origin.CloseClientConnections() // the probe's idle origin connection
	get(2)
	if n := reqs.Load(); n != 2 {
		t.Errorf("the origin saw %d requests for 2", n)
	}
}
