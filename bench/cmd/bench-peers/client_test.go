package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"testing"
	"time"
)

// TestRunWrkCountsItsOwnCPU: a round records wrk's own CPU time and how
// long it ran, so the table can say when wrk's one thread, not the
// server, was the bottleneck.
func TestRunWrkCountsItsOwnCPU(t *testing.T) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("wrk is not installed (apt-get install wrk; .ci/run installs it)")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := runWrk(ctx, wrk, srv.URL, settings{connections: 4, duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.requests == 0 {
		t.Fatal("no request completed")
	}
	if res.wall < time.Second {
		t.Errorf("wall time %v, less than the round's 1s", res.wall)
	}
	if res.cpu <= 0 {
		t.Errorf("wrk's CPU time %v: not recorded", res.cpu)
	}
	// One load thread (-t1): its share of a core is above nothing and,
	// with the main thread asleep, not much above one core.
	if b := res.busy(); b <= 0 || b > 1.2 {
		t.Errorf("wrk busy %.2f of a core: outside (0, 1.2]", b)
	}
}

// TestClientBound: a row is wrk-bound when wrk's median round used at
// least clientBoundAt of a core; the table shows wrk's median CPU per
// request and share of a core.
func TestClientBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rounds [][2]float64 // µs per request, share of a core
		bound  bool
		shown  string
	}{
		{"none", nil, false, "—"},
		{"idle wrk", [][2]float64{{17.5, 0.64}, {18.0, 0.66}, {17.0, 0.62}}, false, "17.5, 64%"},
		{"busy wrk", [][2]float64{{49.5, 1.00}, {58.1, 0.97}, {63.0, 0.94}}, true, "58.1, 97%"},
		{"median below the bound", [][2]float64{{50, 0.95}, {40, 0.70}, {45, 0.80}}, false, "45.0, 80%"},
		{"at the bound", [][2]float64{{50, clientBoundAt}}, true, "50.0, 90%"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := clientBound(tc.rounds); got != tc.bound {
				t.Errorf("clientBound = %v, want %v", got, tc.bound)
			}
			if got := clientPer(tc.rounds); got != tc.shown {
				t.Errorf("clientPer = %q, want %q", got, tc.shown)
			}
		})
	}
}

// TestRoundCounted: a round counts only when every response was a
// complete 2xx/3xx with no socket error; of the others, only one whose
// sole fault was wrk's timeouts (a stall) is run again.
func TestRoundCounted(t *testing.T) {
	const size = 1024
	ok := "connect 0, read 0, write 0, timeout 0"
	for _, tc := range []struct {
		name           string
		res            wrkResult
		counted, stall bool
	}{
		{"complete", wrkResult{requests: 100, bytes: 100 * 1300}, true, false},
		{"complete, socket line of zeros", wrkResult{requests: 100, bytes: 100 * 1300, sockErr: ok}, true, false},
		{"timeouts only", wrkResult{requests: 100, bytes: 100 * 1300, sockErr: "connect 0, read 0, write 0, timeout 63"}, false, true},
		{"timeouts and short bodies", wrkResult{requests: 100, bytes: 100 * 500, sockErr: "connect 0, read 0, write 0, timeout 3"}, false, false},
		{"timeouts and non-2xx", wrkResult{requests: 100, bytes: 100 * 1300, non2xx: 1, sockErr: "connect 0, read 0, write 0, timeout 3"}, false, false},
		{"read errors", wrkResult{requests: 100, bytes: 100 * 1300, sockErr: "connect 0, read 5, write 0, timeout 0"}, false, false},
		{"read errors and timeouts", wrkResult{requests: 100, bytes: 100 * 1300, sockErr: "connect 0, read 5, write 0, timeout 2"}, false, false},
		{"nothing completed", wrkResult{sockErr: "connect 0, read 0, write 0, timeout 64"}, false, false},
		{"unreadable socket line", wrkResult{requests: 100, bytes: 100 * 1300, sockErr: "timeouts: many"}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.res.complete(size); (err == nil) != tc.counted {
				t.Errorf("complete = %v, want counted %v", err, tc.counted)
			}
			if got := tc.res.onlyTimedOut(size); got != tc.stall {
				t.Errorf("onlyTimedOut = %v, want %v", got, tc.stall)
			}
		})
	}
}
