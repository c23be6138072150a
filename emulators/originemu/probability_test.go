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
