package originemu

import (
	"net/http"
	"slices"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/rules"
)

// #16 item 4 over the wire: two emulator runs with the same seeded rule
// fail the same requests of a sequence, and the counters say so.
func TestSeededProbabilityOverHTTP(t *testing.T) {
	const n = 200
	run := func() []int {
		e := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "web", Profile: HTTP}}})
		mustAdd(t, e, rules.Rule{Match: rules.Match{PathPrefix: "/soak/"}, Unlimited: true,
			Probability: 0.2, Seed: 2026, Action: rules.Action{Status: 503}})
		c := &http.Client{}
		var failed []int
		for i := range n {
			resp, _, err := get(t, c, e.URL("web")+"/soak/seg.ts")
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode == http.StatusServiceUnavailable {
				failed = append(failed, i)
			}
		}
		st := e.Rules()[0]
		if st.Seen != n || st.Fired != int64(len(failed)) {
			t.Fatalf("seen %d fired %d, want %d and %d", st.Seen, st.Fired, n, len(failed))
		}
		return failed
	}
	a, b := run(), run()
	if !slices.Equal(a, b) || len(a) == 0 || len(a) == n {
		t.Fatalf("runs failed different (or no, or all) requests:\n%v\n%v", a, b)
	}
}

// The same in the path: /_emu/probability=P/seed=N/... counts per path, so
// two runs fail the same requests; times= still bounds the fires.
func TestSeededProbabilityInPath(t *testing.T) {
	run := func(path string) []int {
		e := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "web", Profile: HTTP}}})
		var failed []int
		for i := range 100 {
			resp, _, err := get(t, &http.Client{}, e.URL("web")+path)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode == http.StatusServiceUnavailable {
				failed = append(failed, i)
			}
		}
		return failed
	}
	const path = "/_emu/probability=0.3/seed=5/status=503/seg.ts"
	a, b := run(path), run(path)
	if !slices.Equal(a, b) || len(a) < 10 || len(a) > 50 {
		t.Fatalf("runs failed %v and %v, want the same ~30 of 100", a, b)
	}
	if capped := run("/_emu/probability=0.3/seed=5/times=3/status=503/seg.ts"); !slices.Equal(capped, a[:3]) {
		t.Fatalf("with times=3 failed %v, want the first 3 of %v", capped, a)
	}
}
