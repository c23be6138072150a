package rules

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		path    string
		ok      bool
		objPath string
		check   func(t *testing.T, ps PathScript)
		wantErr string
	}{
		{path: "/plain/x", ok: false},
		{path: "/_emu/status=503/times=2/a/b.ts", ok: true, objPath: "/a/b.ts", check: func(t *testing.T, ps PathScript) {
			if ps.Rule.Action.Status != 503 || ps.Rule.Times != 2 || ps.Rule.Unlimited {
				t.Errorf("rule %+v", ps.Rule)
			}
		}},
		{path: "/_emu/status=502/x", ok: true, objPath: "/x", check: func(t *testing.T, ps PathScript) {
			if !ps.Rule.Unlimited {
				t.Error("a path script without times= should fire on every request")
			}
		}},
		{path: "/_emu/drip=1024@100ms/stall=10/x", ok: true, objPath: "/x", check: func(t *testing.T, ps PathScript) {
			if d := ps.Rule.Action.Drip; d == nil || d.Bytes != 1024 || d.Every.D().Milliseconds() != 100 {
				t.Errorf("drip %+v", d)
			}
			if c := ps.Rule.Action.Stall; c == nil || *c.AfterBytes != 10 {
				t.Errorf("stall %+v", c)
			}
		}},
		{path: "/_emu/reset/x", ok: true, objPath: "/x", check: func(t *testing.T, ps PathScript) {
			if c := ps.Rule.Action.Reset; c == nil || !c.Before() {
				t.Errorf("reset %+v", c)
			}
		}},
		{path: "/_emu/rstStream=CANCEL@100/goAway=NO_ERROR/x", ok: true, wantErr: "at most one"},
		{path: "/_emu/rstStream=REFUSED_STREAM@100/x", ok: true, objPath: "/x", check: func(t *testing.T, ps PathScript) {
			if c := ps.Rule.Action.RSTStream; c == nil || c.Code != "REFUSED_STREAM" || *c.AfterBytes != 100 {
				t.Errorf("rst %+v", c)
			}
		}},
		{path: "/_emu/hold=gate:3/x", ok: true, objPath: "/x", check: func(t *testing.T, ps PathScript) {
			if h := ps.Rule.Action.Hold; h == nil || h.Name != "gate" || h.Count != 3 {
				t.Errorf("hold %+v", h)
			}
		}},
		{path: "/_emu/location=https:%2F%2Fo.test%2Fy/redirect=308/x", ok: true, objPath: "/x", check: func(t *testing.T, ps PathScript) {
			if r := ps.Rule.Action.Redirect; r == nil || r.Status != 308 || r.Location != "https://o.test/y" {
				t.Errorf("redirect %+v", r)
			}
		}},
		{path: "/_emu/size=10/version=b/etag=%22e%22/noRanges/h.X-A=1/omit=Date/x", ok: true, objPath: "/x", check: func(t *testing.T, ps PathScript) {
			o := ps.Object
			if *o.Size != 10 || o.Version != "b" || *o.ETag != `"e"` || !o.NoRanges || ps.Rule.Action.Headers["X-A"] != "1" || ps.Rule.Action.Omit[0] != "Date" {
				t.Errorf("object %+v rule %+v", o, ps.Rule)
			}
		}},
		{path: "/_emu/status=503/-/status=x", ok: true, objPath: "/status=x"},
		{path: "/_emu/", ok: true, objPath: "/"},
		{path: "/_emu/status=abc/x", ok: true, wantErr: `"status=abc"`},
		{path: "/_emu/delay=soon/x", ok: true, wantErr: "delay=soon"},
		{path: "/_emu/status/x", ok: true, wantErr: "needs a value"},
		{path: "/_emu/truncate/x", ok: true, wantErr: "needs a value (truncate="},
		{path: "/_emu/drip=10/x", ok: true, wantErr: "BYTES@INTERVAL"},
		{path: "/_emu/times=0/x", ok: true, wantErr: "times=0"},
		{path: "/_emu/status=999/x", ok: true, wantErr: "path.action.status"},
		{path: "/_emu/size=-1/x", ok: true, wantErr: "size"},
		// #12 item 9: no header injection through the path either.
		{path: "/_emu/contentType=text%2Fplain%0D%0AX-Evil:%201/x", ok: true, wantErr: "path.object.contentType: must not contain CR, LF or NUL"},
		{path: "/_emu/cacheControl=max-age%3D1%0AX-Evil:%201/x", ok: true, wantErr: "path.object.cacheControl"},
		{path: "/_emu/h.X-A=1%0D%0AX-Evil:%201/x", ok: true, wantErr: "path.action.headers.X-A: value must not contain CR, LF or NUL"},
		{path: "/_emu/h.X%20A=1/x", ok: true, wantErr: "not a header name"},
		{path: "/_emu/shape=bandwidth:1000,latency:50ms,sliceBytes:10/x", ok: true, objPath: "/x", check: func(t *testing.T, ps PathScript) {
			if s := ps.Rule.Action.Shape; s == nil || s.Bandwidth != 1000 || s.Latency.D().Milliseconds() != 50 || s.SliceBytes != 10 {
				t.Errorf("shape %+v", s)
			}
		}},
		{path: "/_emu/shape=speed:1/x", ok: true, wantErr: `unknown shaping key "speed"`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ps, ok, err := ParsePath(tc.path)
			if ok != tc.ok {
				t.Fatalf("ok = %v", ok)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok && ps.ObjectPath != tc.objPath {
				t.Fatalf("object path %q, want %q", ps.ObjectPath, tc.objPath)
			}
			if tc.check != nil {
				tc.check(t, ps)
			}
		})
	}
}

func TestRuleJSON(t *testing.T) {
	in := `{"match":{"pathPrefix":"/a/","nth":2},"times":3,"action":{"delay":"1.5s","status":503,"drip":{"bytes":10,"every":"10ms"},"rstStream":{"code":"CANCEL","afterBytes":5}}}`
	var r Rule
	if err := json.Unmarshal([]byte(in), &r); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(""); err != nil {
		t.Fatal(err)
	}
	if r.Action.Delay.D().Seconds() != 1.5 || *r.Action.RSTStream.AfterBytes != 5 || r.Budget() != 3 {
		t.Fatalf("%+v", r)
	}
	out, _ := json.Marshal(r)
	if !strings.Contains(string(out), `"delay":"1.5s"`) {
		t.Fatalf("round trip: %s", out)
	}
	var bad Rule
	if err := json.Unmarshal([]byte(`{"action":{"delay":5}}`), &bad); err == nil || !strings.Contains(err.Error(), "duration") {
		t.Fatalf("numeric delay: %v", err)
	}
}

func TestTableFireOrderAndBudget(t *testing.T) {
	tb := NewTable(nil)
	stored, err := tb.Add(
		Rule{Match: Match{PathPrefix: "/a"}, Times: 2, Action: Action{Status: 500}},
		Rule{Match: Match{PathPrefix: "/a"}, Unlimited: true, Action: Action{Status: 404}},
	)
	if err != nil || stored[0].ID != "r1" || stored[1].ID != "r2" {
		t.Fatalf("%v %+v", err, stored)
	}
	var got []int
	for i := 0; i < 4; i++ {
		r, ok := tb.Fire(Target{Path: "/a/x", Method: "GET"})
		if !ok {
			t.Fatal("no rule fired")
		}
		got = append(got, r.Action.Status)
	}
	if want := []int{500, 500, 404, 404}; len(got) != 4 || got[0] != want[0] || got[2] != want[2] {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	if _, ok := tb.Fire(Target{Path: "/b"}); ok {
		t.Fatal("rule fired for a path it does not match")
	}
	if _, err := tb.Add(Rule{ID: "r2"}); err == nil || !strings.Contains(err.Error(), "exists already") {
		t.Fatalf("duplicate id: %v", err)
	}
	if !tb.Delete("r1") || tb.Delete("r1") {
		t.Fatal("delete")
	}
}

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/_emu/status=503/x", "/_emu/drip=1@1ms/reset/x", "/_emu/hold=a:2/location=%2F/x", "/_emu/%zz/x", "/_emu/rstStream=@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		ps, ok, err := ParsePath(p)
		if ok && err == nil && !strings.HasPrefix(ps.ObjectPath, "/") {
			t.Fatalf("object path %q does not start with /", ps.ObjectPath)
		}
	})
}

// The index must not change which rule fires: rules of every kind (exact
// path, prefix, listener-only, match-all), interleaved, fire in the order
// they were added, exactly as a linear scan would pick them.
func TestTableIndexKeepsInsertionOrder(t *testing.T) {
	rs := []Rule{
		{ID: "any-listener-b", Match: Match{Listener: "b"}, Unlimited: true},
		{ID: "exact", Match: Match{Path: "/a/x"}, Times: 1},
		{ID: "prefix-long", Match: Match{PathPrefix: "/a/"}, Times: 1},
		{ID: "all", Match: Match{Method: "GET"}, Times: 1},
		{ID: "prefix-short", Match: Match{PathPrefix: "/"}, Times: 1},
		{ID: "exact-late", Match: Match{Path: "/a/x", Nth: 2}, Times: 1},
	}
	for _, tc := range []struct {
		tgt  Target
		want []string // the rules that fire, request by request
	}{
		{Target{Listener: "a", Method: "GET", Path: "/a/x"}, []string{"exact", "prefix-long", "all", "prefix-short", "", "exact-late"}},
		{Target{Listener: "b", Method: "GET", Path: "/a/x"}, []string{"any-listener-b", "any-listener-b"}},
		{Target{Listener: "a", Method: "PUT", Path: "/z"}, []string{"prefix-short", ""}},
		{Target{Listener: "a", Method: "GET", Path: "/a"}, []string{"all", "prefix-short", ""}},
	} {
		tb := NewTable(nil)
		if _, err := tb.Add(rs...); err != nil {
			t.Fatal(err)
		}
		var got []string
		for range tc.want {
			r, _ := tb.Fire(tc.tgt)
			got = append(got, r.ID)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%+v fired %v, want %v", tc.tgt, got, tc.want)
		}
	}
	// Deleting keeps the index consistent.
	tb := NewTable(nil)
	tb.Add(rs...)
	for _, id := range []string{"exact", "prefix-long", "all", "prefix-short"} {
		if !tb.Delete(id) {
			t.Fatalf("delete %s", id)
		}
	}
	if r, ok := tb.Fire(Target{Listener: "a", Method: "GET", Path: "/a/x"}); ok {
		t.Fatalf("%s fired; exact-late must still skip its first match", r.ID)
	}
	if r, _ := tb.Fire(Target{Listener: "a", Method: "GET", Path: "/a/x"}); r.ID != "exact-late" {
		t.Fatalf("fired %q, want exact-late", r.ID)
	}
}

func TestTableMaxRules(t *testing.T) {
	tb := NewTable(nil)
	tb.SetMax(3)
	if _, err := tb.Add(Rule{}, Rule{}); err != nil {
		t.Fatal(err)
	}
	_, err := tb.Add(Rule{}, Rule{})
	if err == nil || !strings.Contains(err.Error(), "at most 3 rules") || !strings.Contains(err.Error(), "has 2 and this adds 2") {
		t.Fatalf("err = %v, want the cap named", err)
	}
	if n := len(tb.List()); n != 2 {
		t.Fatalf("%d rules stored after a refused batch, want 2", n)
	}
	if _, err := tb.Add(Rule{}); err != nil {
		t.Fatalf("filling up to the cap: %v", err)
	}
}

// #16 item 4: a probabilistic rule with a seed fires for the same requests
// on every run, for about its share of them; another seed picks others.
func TestProbabilisticRuleIsSeeded(t *testing.T) {
	const n, p = 1000, 0.1
	run := func(seed uint64) []int {
		tb := NewTable(nil)
		if _, err := tb.Add(Rule{Match: Match{PathPrefix: "/soak/"}, Unlimited: true, Probability: p, Seed: seed, Action: Action{Status: 503}}); err != nil {
			t.Fatal(err)
		}
		var fired []int
		for i := range n {
			if _, ok := tb.Fire(Target{Method: "GET", Path: "/soak/x"}); ok {
				fired = append(fired, i)
			}
		}
		if st := tb.List()[0]; st.Seen != n || st.Fired != int64(len(fired)) {
			t.Fatalf("counters seen %d fired %d, want %d and %d", st.Seen, st.Fired, n, len(fired))
		}
		return fired
	}
	a, b, other := run(42), run(42), run(43)
	if !slices.Equal(a, b) {
		t.Fatalf("two runs with seed 42 fired different requests:\n%v\n%v", a, b)
	}
	if slices.Equal(a, other) {
		t.Fatal("seeds 42 and 43 fired the same requests")
	}
	// 1000 draws at 10%: 100 expected, sd 9.5; 60..140 is more than 4 sd.
	if len(a) < 60 || len(a) > 140 {
		t.Fatalf("fired %d of %d at p=%v", len(a), n, p)
	}
	for _, tc := range []struct {
		r    Rule
		want string
	}{
		{Rule{Probability: 1.5}, "probability: must be between 0 and 1"},
		{Rule{Probability: -0.1}, "probability: must be between 0 and 1"},
		{Rule{Seed: 7}, "seed: only means something with probability"},
	} {
		if err := tc.r.Validate(""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.r, err, tc.want)
		}
	}
}
