package policy

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/internal/httpdate"
	"github.com/edgeconform/edgeconform/reference/config"
)

func TestCurrentAge(t *testing.T) {
	t0 := now
	date := func(d time.Duration) string { return "Date: " + t0.Add(d).Format(http.TimeFormat) }
	cases := []struct {
		name          string
		h             []string
		req, resp, at time.Duration // offsets from t0
		want          time.Duration
	}{
		{"CCH-7 fresh from origin", []string{date(0)}, 0, 0, 0, 0},
		{"CCH-7 resident time", []string{date(0)}, 0, 0, 30 * time.Second, 30 * time.Second},
		{"CCH-7 apparent age from Date", []string{date(-10 * time.Second)}, 0, 0, 5 * time.Second, 15 * time.Second},
		{"CCH-7 Age header plus response delay", []string{date(0), "Age: 100"}, 0, 2 * time.Second, 2 * time.Second, 102 * time.Second},
		{"CCH-7 Age beats smaller apparent age", []string{date(-10 * time.Second), "Age: 60"}, 0, time.Second, 11 * time.Second, 71 * time.Second},
		{"CCH-7 apparent age beats smaller Age", []string{date(-100 * time.Second), "Age: 5"}, 0, 0, 0, 100 * time.Second},
		{"CCH-7 Date in the future: apparent 0", []string{date(time.Hour)}, 0, time.Second, time.Second, time.Second},
		{"CCH-7 no Date", []string{"Age: 7"}, 0, 0, 3 * time.Second, 10 * time.Second},
		{"CCH-7 invalid Date", []string{"Date: yesterday"}, 0, 0, 3 * time.Second, 3 * time.Second},
		{"CCH-7 overflowing Age capped", []string{"Age: 99999999999999999999999"}, 0, 0, 0, 2147483648 * time.Second},
		// RFC 9111 5.1: Age is one non-negative integer. Anything else
		// (a list, two field lines, a word) makes the response stale
		// (INT: the RFC says ignore; a cache that cannot tell a response's
		// age does not serve it as fresh).
		{"RFC 9111 5.1 Age list is stale", []string{date(0), "Age: old, 0"}, 0, 0, 0, 2147483648 * time.Second},
		{"RFC 9111 5.1 Age list of numbers is stale", []string{date(0), "Age: 0, 0"}, 0, 0, 0, 2147483648 * time.Second},
		{"RFC 9111 5.1 Age negative is stale", []string{date(0), "Age: -5"}, 0, 0, 0, 2147483648 * time.Second},
		{"RFC 9111 5.1 Age word is stale", []string{date(0), "Age: old"}, 0, 0, 0, 2147483648 * time.Second},
		{"RFC 9111 5.1 Age empty is stale", []string{date(0), "Age: "}, 0, 0, 0, 2147483648 * time.Second},
		{"RFC 9111 5.1 Age two field lines is stale", []string{"Age: 3", "Age: 9"}, 0, 0, 0, 2147483648 * time.Second},
		{"RFC 9111 5.1 Age with surrounding whitespace", []string{date(0), "Age:  12 "}, 0, 0, 0, 12 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := hdr(c.h...)
			if got := CurrentAge(h, t0.Add(c.req), t0.Add(c.resp), t0.Add(c.at)); got != c.want {
				t.Errorf("CurrentAge = %v, want %v", got, c.want)
			}
			date, err := httpdate.Parse(h.Get("Date"))
			if got := CurrentAgeDated(date, err == nil, h, t0.Add(c.req), t0.Add(c.resp), t0.Add(c.at)); got != c.want {
				t.Errorf("CurrentAgeDated = %v, want %v", got, c.want)
			}
		})
	}
}

func TestFresh(t *testing.T) {
	cases := []struct {
		name string
		d    Decision
		age  time.Duration
		want bool
	}{
		{"CCH-7 younger than TTL", Decision{Store: true, TTL: time.Minute}, 59 * time.Second, true},
		{"CCH-7 age equal to TTL is stale", Decision{Store: true, TTL: time.Minute}, time.Minute, false},
		{"CCH-7 older than TTL", Decision{Store: true, TTL: time.Minute}, time.Hour, false},
		{"CCH-4 no-cache never fresh", Decision{Store: true, TTL: time.Hour, NoCache: true}, 0, false},
		{"CCH-4 TTL 0 always revalidate", Decision{Store: true}, 0, false},
		{"CCH-1 not stored never fresh", Decision{TTL: time.Hour}, 0, false},
		{"CCH-4 must-revalidate fresh while young", Decision{Store: true, TTL: time.Minute, MustRevalidate: true}, time.Second, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Fresh(c.d, c.age); got != c.want {
				t.Errorf("Fresh = %v, want %v", got, c.want)
			}
		})
	}
	// End to end: Decide then age.
	h := hdr("Date: "+now.Add(-50*time.Second).Format(http.TimeFormat), "Cache-Control: max-age=60", "Age: 5")
	d := New(nil).Decide(nil, 200, h, now)
	age := CurrentAge(h, now.Add(-time.Second), now, now.Add(4*time.Second))
	if age != 54*time.Second || !Fresh(d, age) {
		t.Errorf("CCH-7: age %v fresh %v", age, Fresh(d, age))
	}
	if Fresh(d, CurrentAge(h, now, now, now.Add(10*time.Second))) {
		t.Errorf("CCH-7: must be stale at age 60s")
	}
}

func TestConditional(t *testing.T) {
	cases := []struct {
		name   string
		stored []string
		want   http.Header
	}{
		{"CCH-4 ETag", []string{`Etag: "v1"`}, http.Header{"If-None-Match": {`"v1"`}}},
		{"CCH-4 weak ETag", []string{`ETag: W/"v1"`}, http.Header{"If-None-Match": {`W/"v1"`}}},
		{"CCH-4 Last-Modified", []string{"Last-Modified: Sun, 01 Feb 2026 00:00:00 GMT"}, http.Header{"If-Modified-Since": {"Sun, 01 Feb 2026 00:00:00 GMT"}}},
		{"CCH-4 both", []string{`ETag: "x"`, "Last-Modified: Sun, 01 Feb 2026 00:00:00 GMT"}, http.Header{"If-None-Match": {`"x"`}, "If-Modified-Since": {"Sun, 01 Feb 2026 00:00:00 GMT"}}},
		{"CCH-4 no validator", []string{"Content-Type: text/css"}, http.Header{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Conditional(hdr(c.stored...)); !reflect.DeepEqual(got, c.want) {
				t.Errorf("Conditional = %v, want %v", got, c.want)
			}
		})
	}
}

func TestMerge304(t *testing.T) {
	stored := hdr(
		"Content-Type: video/mp4", "Content-Length: 1000", "Content-Range: bytes 0-999/5000",
		"Content-Encoding: gzip", `ETag: "v1"`, "Cache-Control: max-age=60",
		"Date: Sun, 01 Mar 2026 11:00:00 GMT", "Age: 100", "X-Keep: 1", "X-Multi: a", "X-Multi: b")
	fresh := hdr(
		"Content-Length: 0", "Content-Range: bytes */9", "Content-Encoding: br", "Transfer-Encoding: chunked",
		`ETag: "v1"`, "Cache-Control: max-age=120", "Date: Sun, 01 Mar 2026 12:00:00 GMT",
		"Connection: X-Hop", "X-Hop: 1", "Keep-Alive: timeout=5", "Set-Cookie: s=1", "X-Multi: c", "X-New: n")
	before := stored.Clone()
	freshBefore := fresh.Clone()
	got := Merge304(stored, fresh)
	want := hdr(
		"Content-Type: video/mp4", "Content-Length: 1000", "Content-Range: bytes 0-999/5000",
		"Content-Encoding: gzip", `ETag: "v1"`, "Cache-Control: max-age=120",
		"Date: Sun, 01 Mar 2026 12:00:00 GMT", "X-Keep: 1", "X-Multi: c", "X-New: n")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CCH-4 Merge304:\n got %v\nwant %v", got, want)
	}
	if !reflect.DeepEqual(stored, before) || !reflect.DeepEqual(fresh, freshBefore) {
		t.Errorf("CCH-4 Merge304 modified its inputs")
	}
	// A 304 that repeats Age replaces it.
	if g := Merge304(stored, hdr("Age: 3")); g.Get("Age") != "3" {
		t.Errorf("CCH-4 Merge304: Age %q, want 3", g.Get("Age"))
	}
	// Non-canonical keys in fresh are handled.
	if g := Merge304(stored, http.Header{"x-keep": {"2"}}); g.Get("X-Keep") != "2" || len(g.Values("X-Keep")) != 1 {
		t.Errorf("CCH-4 Merge304: X-Keep %v", g.Values("X-Keep"))
	}
	if g := Merge304(nil, hdr("X-A: 1")); g.Get("X-A") != "1" {
		t.Errorf("CCH-4 Merge304(nil): %v", g)
	}
	// After the merge the new Cache-Control decides.
	if d := New(&config.CDNPolicy{CacheMode: UseOriginHeaders}).Decide(nil, 200, got, now); d.TTL != 120*time.Second {
		t.Errorf("CCH-4: merged TTL %v", d.TTL)
	}
}

func TestInvalidates(t *testing.T) {
	cases := []struct {
		method string
		status int
		want   bool
	}{
		{"POST", 200, true}, {"PUT", 201, true}, {"DELETE", 204, true}, {"PATCH", 200, true},
		{"POST", 303, true}, {"PURGE", 200, true}, {"post", 200, true},
		{"POST", 400, false}, {"DELETE", 404, false}, {"PUT", 500, false}, {"POST", 100, false},
		{"GET", 200, false}, {"HEAD", 200, false}, {"OPTIONS", 200, false}, {"TRACE", 200, false},
	}
	for _, c := range cases {
		if got := Invalidates(c.method, c.status); got != c.want {
			t.Errorf("CCH-7 Invalidates(%s, %d) = %v, want %v", c.method, c.status, got, c.want)
		}
	}
}
