package upstream

import (
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/reference/config"
)

// Concurrent first requests to an h2 target (no connection yet), held at
// the origin until all have arrived: every one reaches it and succeeds,
// whichever connection it ends up on.
func TestH2ColdConcurrentRequests(t *testing.T) {
	e := startEmu(t)
	c := newClient(t, e)
	tgt := target(t, e, config.ProtocolHTTP2, "h2", "origin.test")
	const n = 8
	if _, err := e.AddRules(rules.Rule{Match: rules.Match{PathPrefix: "/cold/"}, Times: n,
		Action: rules.Action{Hold: &rules.Hold{Name: "cold", Count: n, Timeout: rules.Duration(5 * time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			_, _, errs[i] = roundTrip(t, c, tgt, newReq(t, "GET", "/cold/"+string(rune('a'+i))))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
	}
	if time.Since(start) >= 5*time.Second {
		t.Fatal("the barrier for all requests timed out: some never reached the origin together")
	}
	if got := len(e.Journal().Query(journal.Query{PathPrefix: "/cold/"}).Requests); got != n {
		t.Fatalf("the origin saw %d requests, want %d", got, n)
	}
}
