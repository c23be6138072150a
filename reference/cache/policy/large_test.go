package policy

import (
	"strings"
	"testing"
)

func TestLargeObjectCacheable(t *testing.T) {
	date := "Date: Sun, 01 Mar 2026 12:00:00 GMT"
	cases := []struct {
		name   string
		status int
		h      []string
		ok     bool
		reason string
	}{
		{"RNG-1 200 with ETag", 200, []string{`ETag: "a"`, date, "Content-Length: 5000000"}, true, ""},
		{"RNG-1 200 with Last-Modified", 200, []string{"Last-Modified: Sun, 01 Feb 2026 00:00:00 GMT", date, "Content-Length: 5000000"}, true, ""},
		{"RNG-1 no validator", 200, []string{date, "Content-Length: 5000000"}, false, "validator"},
		{"RNG-1 no Date", 200, []string{`ETag: "a"`, "Content-Length: 5000000"}, false, "Date"},
		{"RNG-1 invalid Date", 200, []string{`ETag: "a"`, "Date: now", "Content-Length: 5000000"}, false, "Date"},
		{"RNG-1 no Content-Length", 200, []string{`ETag: "a"`, date}, false, "Content-Length"},
		{"RNG-1 negative Content-Length", 200, []string{`ETag: "a"`, date, "Content-Length: -1"}, false, "Content-Length"},
		{"RNG-1 non-numeric Content-Length", 200, []string{`ETag: "a"`, date, "Content-Length: 12a"}, false, "Content-Length"},
		{"RNG-1 conflicting Content-Length", 200, []string{`ETag: "a"`, date, "Content-Length: 10", "Content-Length: 11"}, false, "Content-Length"},
		{"RNG-1 repeated equal Content-Length", 200, []string{`ETag: "a"`, date, "Content-Length: 10, 10"}, true, ""},
		{"RNG-1 206 with Content-Range", 206, []string{`ETag: "a"`, date, "Content-Length: 2097152", "Content-Range: bytes 0-2097151/10000000"}, true, ""},
		{"RNG-1 206 without Content-Range", 206, []string{`ETag: "a"`, date, "Content-Length: 10"}, false, "Content-Range"},
		{"RNG-1 206 unknown complete length", 206, []string{`ETag: "a"`, date, "Content-Length: 10", "Content-Range: bytes 0-9/*"}, false, "Content-Range"},
		{"RNG-1 206 unsatisfied range form", 206, []string{`ETag: "a"`, date, "Content-Length: 0", "Content-Range: bytes */100"}, false, "Content-Range"},
		{"RNG-1 206 last beyond length", 206, []string{`ETag: "a"`, date, "Content-Length: 10", "Content-Range: bytes 91-100/100"}, false, "Content-Range"},
		{"RNG-1 206 first after last", 206, []string{`ETag: "a"`, date, "Content-Length: 10", "Content-Range: bytes 9-0/100"}, false, "Content-Range"},
		{"RNG-1 206 other unit", 206, []string{`ETag: "a"`, date, "Content-Length: 10", "Content-Range: items 0-9/100"}, false, "Content-Range"},
		{"RNG-1 206 length mismatch", 206, []string{`ETag: "a"`, date, "Content-Length: 11", "Content-Range: bytes 0-9/100"}, false, "match"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, why := LargeObjectCacheable(c.status, hdr(c.h...))
			if ok != c.ok || (c.reason != "" && !strings.Contains(why, c.reason)) || (ok && why != "") {
				t.Errorf("got %v %q, want %v (%q)", ok, why, c.ok, c.reason)
			}
		})
	}
	if LargeObject != 1<<20 {
		t.Errorf("RNG-1: threshold %d", LargeObject)
	}
}
