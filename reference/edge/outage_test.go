package edge

import (
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
)

// The primary origin goes down during a sequence of requests, by a runtime
// change of its emulator listener on the same address (#16): the edge
// fails over to the backup within connectTimeout (ATT-3's failover, TMO-1's
// connectTimeout), and comes back to the primary once it serves again.
func TestRuntimeOutageFailsOverAndBack(t *testing.T) {
	const connectTimeout = 500 * time.Millisecond
	r := newRig(t, `
origins:
  - name: primary
    originAddress: primary.test
    protocol: HTTP
    port: {{port "http"}}
    maxAttempts: 1
    retryConditions: [CONNECT_FAILURE]
    failoverOrigin: backup
    timeout: {connectTimeout: 0.5s, maxAttemptsTimeout: 5s}
  - {name: backup, originAddress: backup.test, protocol: HTTPS, port: {{port "https"}}}
service:
  name: outage
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: main}]
    pathMatchers:
      - name: main
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /}], origin: primary, routeAction: {cdnPolicy: {cacheMode: BYPASS_CACHE}}}
`)
	// step asks for path and checks which listener answered and how long
	// the client waited.
	step := func(path, wantListener string, minWait, maxWait time.Duration) {
		t.Helper()
		start := time.Now()
		if s := r.status("GET", "client.example", path); s != 200 {
			t.Fatalf("%s: status %d, want 200", path, s)
		}
		took := time.Since(start)
		reqs := r.waitEnded(path, 1)
		if len(reqs) != 1 || reqs[0].Listener != wantListener {
			t.Fatalf("%s reached %+v, want exactly one request on %s", path, reqs, wantListener)
		}
		if took < minWait || took > maxWait {
			t.Errorf("%s took %s, want %s..%s", path, took, minWait, maxWait)
		}
	}
	const slack = 1500 * time.Millisecond // a loaded machine's scheduling, not the edge's waiting
	step("/seq/1", "http", 0, slack)
	step("/seq/2", "http", 0, slack)

	// Down: refusing, and the edge's open connection to it reset.
	if _, err := r.emu.SetListenerState("http", originemu.StateChange{State: originemu.Refuse, Existing: originemu.ResetConns}); err != nil {
		t.Fatal(err)
	}
	step("/seq/3", "https", 0, connectTimeout) // refused at once: failover well within connectTimeout
	step("/seq/4", "https", 0, connectTimeout)

	// Down harder: SYNs dropped, so the edge waits connectTimeout, then fails over.
	if _, err := r.emu.SetListenerState("http", originemu.StateChange{State: originemu.SYNDrop}); err != nil {
		t.Fatal(err)
	}
	step("/seq/5", "https", connectTimeout, connectTimeout+slack)

	// Back: the next request goes to the primary again.
	if _, err := r.emu.SetListenerState("http", originemu.StateChange{State: originemu.Serving}); err != nil {
		t.Fatal(err)
	}
	step("/seq/6", "http", 0, slack)
	step("/seq/7", "http", 0, slack)

	// The journal lines the outage up with the requests.
	evs := r.emu.Journal().Events("http")
	if len(evs) != 3 || evs[0].To != "refuse" || evs[1].To != "syn-drop" || evs[2].To != "http" {
		t.Fatalf("listener events %+v", evs)
	}
	backup := r.emu.Journal().Query(journal.Query{Listener: "https", PathPrefix: "/seq/"}).Requests
	for _, q := range backup {
		if q.Arrived.Before(evs[0].At) || q.Arrived.After(evs[2].At) {
			t.Errorf("backup request %s at %s is outside the outage %s..%s", q.Path, q.Arrived, evs[0].At, evs[2].At)
		}
	}
}
