package policy

import (
	"net/http"
	"testing"
	"time"
)

func TestShareWithFollowers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		h         http.Header
		varyKeyed bool
		want      bool
	}{
		{"CCH-1: a plain response is shared", hdr("Cache-Control: max-age=60"), true, true},
		{"CCH-1: Set-Cookie is one client's", hdr("Set-Cookie: a=b"), true, false},
		{"CCH-1: private is one client's", hdr("Cache-Control: private, max-age=60"), true, false},
		{"CCH-1: no-store is one client's", hdr("Cache-Control: no-store"), true, false},
		{"CCH-1: public does not override Set-Cookie", hdr("Cache-Control: public", "Set-Cookie: a=b"), true, false},
		{"CCH-6: a Vary that cannot be keyed is not shared", hdr("Vary: X-Other"), false, false},
		{"CCH-6: a keyed Vary is shared", hdr("Vary: Accept"), true, true},
		{"COL-7: an empty head (no directives) is shared", http.Header{}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShareWithFollowers(tc.h, tc.varyKeyed); got != tc.want {
				t.Errorf("ShareWithFollowers(%v, %v) = %v, want %v", tc.h, tc.varyKeyed, got, tc.want)
			}
		})
	}
}

func TestShareAuthorized(t *testing.T) {
	plain, _ := http.NewRequest(http.MethodGet, "http://a.test/x", nil)
	auth, _ := http.NewRequest(http.MethodGet, "http://a.test/x", nil)
	auth.Header.Set("Authorization", "Bearer t")
	stored, notStored := Decision{Store: true, TTL: time.Minute}, Decision{Reason: "CCH-1: Authorization without public"}
	for _, tc := range []struct {
		name   string
		shared bool
		d      Decision
		req    *http.Request
		want   bool
	}{
		{"CCH-1: Authorization and stored (public): shared", true, stored, auth, true},
		{"CCH-1: Authorization and not stored: the leader's alone", true, notStored, auth, false},
		{"CCH-1: no Authorization, not stored: shared", true, notStored, plain, true},
		{"CCH-1: never widens an unshared response", false, stored, plain, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShareAuthorized(tc.shared, tc.d, tc.req); got != tc.want {
				t.Errorf("ShareAuthorized(%v, %+v, auth=%q) = %v, want %v", tc.shared, tc.d, tc.req.Header.Get("Authorization"), got, tc.want)
			}
		})
	}
}

func TestWorthStoring(t *testing.T) {
	for _, tc := range []struct {
		name      string
		d         Decision
		h         http.Header
		varyKeyed bool
		want      bool
	}{
		{"CCH-1: not allowed to store", Decision{TTL: time.Minute}, hdr("Etag: \"a\""), true, false},
		{"fresh for a while", Decision{Store: true, TTL: time.Minute}, http.Header{}, true, true},
		{"TTL 0 without validators is useless", Decision{Store: true}, http.Header{}, true, false},
		{"no-cache without validators is useless", Decision{Store: true, TTL: time.Minute, NoCache: true}, http.Header{}, true, false},
		{"TTL 0 with an ETag can be revalidated", Decision{Store: true}, hdr("Etag: \"a\""), true, true},
		{"no-cache with Last-Modified can be revalidated", Decision{Store: true, NoCache: true}, hdr("Last-Modified: Sun, 01 Mar 2026 10:00:00 GMT"), true, true},
		{"CCH-6: a Vary that cannot be keyed is not stored", Decision{Store: true, TTL: time.Minute}, hdr("Vary: X-Other"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := WorthStoring(tc.d, tc.h, tc.varyKeyed); got != tc.want {
				t.Errorf("WorthStoring(%+v, %v, %v) = %v, want %v", tc.d, tc.h, tc.varyKeyed, got, tc.want)
			}
		})
	}
}

func TestStoreWhole(t *testing.T) {
	for _, tc := range []struct {
		name  string
		worth bool
		size  int64
		want  bool
	}{
		{"RNG-1: small and worth it", true, 10, true},
		{"RNG-1: exactly 1 MiB", true, LargeObject, true},
		{"RNG-1: over 1 MiB goes in chunks", true, LargeObject + 1, false},
		{"unknown size: decided while streaming", true, -1, true},
		{"not worth it", false, 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StoreWhole(tc.worth, tc.size); got != tc.want {
				t.Errorf("StoreWhole(%v, %d) = %v, want %v", tc.worth, tc.size, got, tc.want)
			}
		})
	}
}

func TestDecideLarge(t *testing.T) {
	date := "Date: " + now.Format(http.TimeFormat)
	good := hdr("Etag: \"v1\"", date, "Content-Length: 2097152", "Content-Range: bytes 0-2097151/5000000")
	noValidator := hdr(date, "Content-Length: 2097152", "Content-Range: bytes 0-2097151/5000000")
	for _, tc := range []struct {
		name          string
		h             http.Header
		parentWhy     string
		worth, shared bool
		want          Large
	}{
		{"RNG-1: validator, Date, lengths: kept", good, "", true, true, Large{Keep: true, Cacheable: true}},
		{"RNG-1: no validator", noValidator, "", true, true, Large{Why: "RNG-1: no validator (ETag or Last-Modified)"}},
		{"RNG-1 with SHD-1: the parent's reason wins", good, "RNG-1: missing or invalid Date", true, true,
			Large{Why: "the parent tier's origin response: RNG-1: missing or invalid Date"}},
		{"RNG-1: cacheable but not worth storing", good, "", false, true, Large{Cacheable: true}},
		{"CCH-1: cacheable but one client's", good, "", true, false, Large{Cacheable: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecideLarge(tc.h, tc.parentWhy, tc.worth, tc.shared); got != tc.want {
				t.Errorf("DecideLarge = %+v, want %+v", got, tc.want)
			}
		})
	}
}
