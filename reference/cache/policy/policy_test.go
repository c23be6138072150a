package policy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/reference/config"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func dur(d time.Duration) *config.Duration { c := config.Duration(d); return &c }

// hdr builds a header from "Name: value" lines.
func hdr(lines ...string) http.Header {
	h := http.Header{}
	for _, l := range lines {
		k, v, _ := strings.Cut(l, ":")
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h
}

func TestNewDefaults(t *testing.T) {
	p := New(nil)
	if p.Mode != CacheAllStatic || p.DefaultTTL != time.Hour || p.MaxTTL != 24*time.Hour || p.ClientTTLSet || p.Negative != nil {
		t.Fatalf("New(nil) = %+v", p)
	}
	p = New(&config.CDNPolicy{NegativeCachingPolicy: map[string]config.Duration{"404": config.Duration(time.Second)}})
	if p.Negative != nil {
		t.Errorf("CCH-5: a policy without negativeCaching must leave negative caching off, got %v", p.Negative)
	}
	p = New(&config.CDNPolicy{NegativeCaching: true})
	if len(p.Negative) != len(DefaultNegativeTTLs) {
		t.Errorf("CCH-5: defaults: got %v", p.Negative)
	}
}

func TestDecide(t *testing.T) {
	date := "Date: " + now.Format(http.TimeFormat)
	in := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	static := &config.CDNPolicy{CacheMode: CacheAllStatic, DefaultTTL: dur(100 * time.Second), MaxTTL: dur(1000 * time.Second)}
	origin := &config.CDNPolicy{CacheMode: UseOriginHeaders}
	force := &config.CDNPolicy{CacheMode: ForceCacheAll, DefaultTTL: dur(100 * time.Second)}
	bypass := &config.CDNPolicy{CacheMode: BypassCache}
	negDefault := &config.CDNPolicy{NegativeCaching: true, DefaultTTL: dur(100 * time.Second), MaxTTL: dur(1000 * time.Second)}
	negPolicy := &config.CDNPolicy{NegativeCaching: true, NegativeCachingPolicy: map[string]config.Duration{
		"404": config.Duration(5 * time.Second), "302": config.Duration(7 * time.Second), "503": 0}}
	negForce := &config.CDNPolicy{CacheMode: ForceCacheAll, NegativeCaching: true, DefaultTTL: dur(100 * time.Second)}
	negOrigin := &config.CDNPolicy{CacheMode: UseOriginHeaders, NegativeCaching: true}
	client := &config.CDNPolicy{DefaultTTL: dur(100 * time.Second), ClientTTL: dur(30 * time.Second)}
	clientForce := &config.CDNPolicy{CacheMode: ForceCacheAll, DefaultTTL: dur(100 * time.Second), ClientTTL: dur(300 * time.Second)}
	clientOrigin := &config.CDNPolicy{CacheMode: UseOriginHeaders, ClientTTL: dur(30 * time.Second)}
	varyPol := &config.CDNPolicy{CacheKeyPolicy: &config.CacheKeyPolicy{IncludedHeaderNames: []string{"X-Device"}}}

	type tc struct {
		name   string
		cdn    *config.CDNPolicy
		method string
		req    []string
		status int
		resp   []string
		store  bool
		ttl    time.Duration
		reason string // substring
		mustRe bool
		noCach bool
		client string
	}
	png := "Content-Type: image/png"
	html := "Content-Type: text/html; charset=utf-8"
	cases := []tc{
		// CCH-1: methods.
		{name: "CCH-1 GET static stored", status: 200, resp: []string{png}, store: true, ttl: time.Hour, reason: "CCH-2"},
		{name: "CCH-1 HEAD stored", method: "HEAD", status: 200, resp: []string{png}, store: true, ttl: time.Hour},
		{name: "CCH-1 POST not stored", method: "POST", status: 200, resp: []string{png, "Cache-Control: max-age=60"}, reason: "CCH-1: method POST"},
		{name: "CCH-1 OPTIONS not stored", method: "OPTIONS", status: 200, resp: []string{png}, reason: "CCH-1"},
		{name: "CCH-1 FORCE POST not stored", cdn: force, method: "PUT", status: 200, resp: []string{png}, reason: "CCH-1"},
		// CCH-1: statuses.
		{name: "CCH-1 203 positive", status: 203, resp: []string{png}, store: true, ttl: time.Hour},
		{name: "CCH-1 204 positive", status: 204, resp: []string{"Cache-Control: max-age=5"}, store: true, ttl: 5 * time.Second},
		{name: "CCH-1 206 positive", status: 206, resp: []string{"Content-Type: video/mp4", "Content-Range: bytes 0-9/100", "Content-Length: 10"}, store: true, ttl: time.Hour},
		{name: "CCH-1 201 not cacheable", status: 201, resp: []string{png, "Cache-Control: max-age=60"}, reason: "CCH-1: status 201"},
		{name: "CCH-1 304 not cacheable", status: 304, resp: []string{png}, reason: "CCH-1: status 304"},
		{name: "CCH-1 418 not cacheable even in policy", cdn: &config.CDNPolicy{NegativeCaching: true, NegativeCachingPolicy: map[string]config.Duration{"418": config.Duration(time.Minute)}}, status: 418, resp: []string{png}, reason: "CCH-1: status 418"},
		{name: "CCH-1 FORCE 201 not cacheable", cdn: force, status: 201, resp: []string{png}, reason: "CCH-1"},
		// CCH-1: size.
		{name: "CCH-1 over 100 GiB", status: 200, resp: []string{png, "Content-Length: 107374182401"}, reason: "100 GiB"},
		{name: "CCH-1 exactly 100 GiB", status: 200, resp: []string{png, "Content-Length: 107374182400"}, store: true, ttl: time.Hour},
		{name: "CCH-1 206 complete length over 100 GiB", status: 206, resp: []string{png, "Content-Range: bytes 0-9/107374182401", "Content-Length: 10"}, reason: "100 GiB"},
		// CCH-1: Set-Cookie.
		{name: "CCH-1 Set-Cookie never", status: 200, resp: []string{png, "Set-Cookie: a=b", "Cache-Control: public, max-age=60"}, reason: "Set-Cookie"},
		{name: "CCH-1 Set-Cookie never under FORCE", cdn: force, status: 200, resp: []string{png, "Set-Cookie: a=b"}, reason: "Set-Cookie"},
		// CCH-1 / CCH-3: request no-store; other request directives ignored.
		{name: "CCH-1 request no-store", req: []string{"Cache-Control: no-store"}, status: 200, resp: []string{png}, reason: "request has Cache-Control: no-store"},
		{name: "CCH-1 request no-store under FORCE", cdn: force, req: []string{"Cache-Control: max-age=0, NO-STORE"}, status: 200, resp: []string{png}, reason: "no-store"},
		{name: "CCH-3 request no-cache ignored", req: []string{"Cache-Control: no-cache", "Pragma: no-cache"}, status: 200, resp: []string{png}, store: true, ttl: time.Hour},
		{name: "CCH-3 request max-age=0 ignored", req: []string{"Cache-Control: max-age=0"}, status: 200, resp: []string{png, "Cache-Control: max-age=50"}, store: true, ttl: 50 * time.Second},
		// CCH-1: Authorization.
		{name: "CCH-1 Authorization not stored", req: []string{"Authorization: Bearer x"}, status: 200, resp: []string{png, "Cache-Control: max-age=60"}, reason: "Authorization"},
		{name: "CCH-1 Authorization + public stored", req: []string{"Authorization: Bearer x"}, status: 200, resp: []string{png, "Cache-Control: public, max-age=60"}, store: true, ttl: time.Minute},
		{name: "CCH-1 Authorization + s-maxage stored (RFC 9111 3.5)", req: []string{"Authorization: Bearer x"}, status: 200, resp: []string{png, "Cache-Control: s-maxage=60"}, store: true, ttl: time.Minute, mustRe: true},
		{name: "CCH-1 Authorization + must-revalidate stored (RFC 9111 3.5)", req: []string{"Authorization: Bearer x"}, status: 200, resp: []string{png, "Cache-Control: must-revalidate, max-age=60"}, store: true, ttl: time.Minute, mustRe: true},
		{name: "CCH-1 Authorization under FORCE not stored", cdn: force, req: []string{"Authorization: Bearer x"}, status: 200, resp: []string{png}, reason: "Authorization"},
		{name: "CCH-1 Authorization + public under FORCE", cdn: force, req: []string{"Authorization: Bearer x"}, status: 200, resp: []string{png, "Cache-Control: public"}, store: true, ttl: 100 * time.Second},
		// CCH-1: private / no-store.
		{name: "CCH-1 private not stored", status: 200, resp: []string{png, "Cache-Control: private, max-age=60"}, reason: "private"},
		{name: "CCH-1 private with field list not stored", status: 200, resp: []string{png, `Cache-Control: private="X-A", max-age=60`}, reason: "private"},
		{name: "CCH-1 no-store not stored", status: 200, resp: []string{png, "Cache-Control: max-age=60", "Cache-Control: no-store"}, reason: "no-store"},
		{name: "CCH-1 no-store USE_ORIGIN_HEADERS", cdn: origin, status: 200, resp: []string{"Cache-Control: no-store, max-age=60"}, reason: "no-store"},
		{name: "CCH-1 FORCE ignores private", cdn: force, status: 200, resp: []string{html, "Cache-Control: private"}, store: true, ttl: 100 * time.Second},
		{name: "CCH-1 FORCE ignores no-store", cdn: force, status: 200, resp: []string{html, "Cache-Control: no-store"}, store: true, ttl: 100 * time.Second},
		// CCH-2: CACHE_ALL_STATIC.
		{name: "CCH-2 static without directives defaultTtl", cdn: static, status: 200, resp: []string{"Content-Type: text/css"}, store: true, ttl: 100 * time.Second, reason: "defaultTtl"},
		{name: "CCH-2 static font/woff2", cdn: static, status: 200, resp: []string{"Content-Type: font/woff2"}, store: true, ttl: 100 * time.Second},
		{name: "CCH-2 static HLS playlist", cdn: static, status: 200, resp: []string{"Content-Type: application/vnd.apple.mpegurl"}, store: true, ttl: 100 * time.Second},
		{name: "CCH-2 static with public only defaultTtl", cdn: static, status: 200, resp: []string{png, "Cache-Control: public"}, store: true, ttl: 100 * time.Second},
		{name: "CCH-2 static directive honoured", cdn: static, status: 200, resp: []string{png, "Cache-Control: max-age=500"}, store: true, ttl: 500 * time.Second, reason: "CCH-3: max-age"},
		{name: "CCH-2 static directive capped at maxTtl", cdn: static, status: 200, resp: []string{png, "Cache-Control: max-age=5000"}, store: true, ttl: 1000 * time.Second, reason: "maxTtl"},
		{name: "CCH-2 static Expires capped at maxTtl", cdn: static, status: 200, resp: []string{png, date, "Expires: " + in(time.Hour)}, store: true, ttl: 1000 * time.Second, reason: "maxTtl"},
		{name: "CCH-2 default maxTtl 86400s", status: 200, resp: []string{png, "Cache-Control: max-age=999999"}, store: true, ttl: 86400 * time.Second},
		{name: "CCH-2 non-static without directives not stored", cdn: static, status: 200, resp: []string{html}, reason: "non-static"},
		{name: "CCH-2 no Content-Type without directives not stored", cdn: static, status: 200, reason: "non-static"},
		{name: "CCH-2 non-static with max-age stored", cdn: static, status: 200, resp: []string{html, "Cache-Control: max-age=60"}, store: true, ttl: time.Minute},
		{name: "CCH-2 non-static with public only not stored", cdn: static, status: 200, resp: []string{"Content-Type: application/json", "Cache-Control: public"}, reason: "non-static"},
		{name: "CCH-2 max-age=0 stored, always revalidate", cdn: static, status: 200, resp: []string{png, "Cache-Control: max-age=0"}, store: true, ttl: 0},
		// CCH-2: USE_ORIGIN_HEADERS.
		{name: "CCH-2 USE_ORIGIN_HEADERS static without directives not stored", cdn: origin, status: 200, resp: []string{png}, reason: "heuristic"},
		{name: "CCH-2 USE_ORIGIN_HEADERS Last-Modified no heuristic", cdn: origin, status: 200, resp: []string{png, date, "Last-Modified: " + in(-240*time.Hour)}, reason: "heuristic"},
		{name: "CCH-2 USE_ORIGIN_HEADERS max-age not capped", cdn: origin, status: 200, resp: []string{html, "Cache-Control: max-age=200000"}, store: true, ttl: 200000 * time.Second},
		{name: "CCH-2 USE_ORIGIN_HEADERS Expires", cdn: origin, status: 200, resp: []string{html, date, "Expires: " + in(90*time.Second)}, store: true, ttl: 90 * time.Second, reason: "Expires"},
		{name: "CCH-2 USE_ORIGIN_HEADERS public only not stored", cdn: origin, status: 200, resp: []string{png, "Cache-Control: public"}, reason: "heuristic"},
		// CCH-2: FORCE_CACHE_ALL.
		{name: "CCH-2 FORCE non-static defaultTtl", cdn: force, status: 200, resp: []string{html}, store: true, ttl: 100 * time.Second, reason: "FORCE_CACHE_ALL"},
		{name: "CCH-2 FORCE overrides max-age", cdn: force, status: 200, resp: []string{png, "Cache-Control: max-age=5"}, store: true, ttl: 100 * time.Second},
		{name: "CCH-2 FORCE ignores no-cache and must-revalidate", cdn: force, status: 200, resp: []string{png, "Cache-Control: no-cache, must-revalidate"}, store: true, ttl: 100 * time.Second},
		{name: "CCH-2 FORCE 404 without negative caching not stored", cdn: force, status: 404, resp: []string{html}, reason: "CCH-5"},
		// CCH-2: BYPASS_CACHE.
		{name: "CCH-2 BYPASS_CACHE never", cdn: bypass, status: 200, resp: []string{png, "Cache-Control: public, max-age=60"}, reason: "BYPASS_CACHE"},
		{name: "CCH-2 unknown mode never", cdn: &config.CDNPolicy{CacheMode: "NOPE"}, status: 200, resp: []string{png}, reason: "unknown"},
		// CCH-3: precedence.
		{name: "CCH-3 s-maxage beats max-age", status: 200, resp: []string{png, "Cache-Control: max-age=10, s-maxage=20"}, store: true, ttl: 20 * time.Second, reason: "s-maxage", mustRe: true},
		{name: "CCH-3 s-maxage beats larger max-age", status: 200, resp: []string{png, "Cache-Control: s-maxage=20, max-age=900"}, store: true, ttl: 20 * time.Second, mustRe: true},
		{name: "CCH-3 max-age beats Expires", cdn: origin, status: 200, resp: []string{png, date, "Expires: " + in(time.Hour), "Cache-Control: max-age=10"}, store: true, ttl: 10 * time.Second},
		{name: "CCH-3 Expires ignored when Cache-Control present", cdn: origin, status: 200, resp: []string{png, date, "Expires: " + in(time.Hour), "Cache-Control: public"}, reason: "heuristic"},
		{name: "CCH-3 Expires ignored when Cache-Control present (static: defaultTtl)", cdn: static, status: 200, resp: []string{png, date, "Expires: " + in(time.Hour), "Cache-Control: public"}, store: true, ttl: 100 * time.Second},
		{name: "CCH-3 Expires in the past: already expired", cdn: origin, status: 200, resp: []string{png, date, "Expires: " + in(-time.Hour)}, store: true, ttl: 0, reason: "already expired"},
		{name: "CCH-3 Expires invalid: already expired", cdn: static, status: 200, resp: []string{png, "Expires: 0"}, store: true, ttl: 0, reason: "invalid"},
		// RFC 9111 5.3 / RFC 9110 5.6.7: an Expires that is not a valid
		// HTTP-date means already expired; only the three formats, exactly.
		{name: "CCH-3 RFC 9111 5.3 Expires one-digit hour invalid", cdn: origin, status: 200, resp: []string{date, "Expires: Mon, 02 Mar 2026 9:00:00 GMT"}, store: true, ttl: 0, reason: "invalid"},
		{name: "CCH-3 RFC 9111 5.3 Expires one-digit day invalid", cdn: origin, status: 200, resp: []string{date, "Expires: Mon, 2 Mar 2026 09:00:00 GMT"}, store: true, ttl: 0, reason: "invalid"},
		{name: "CCH-3 RFC 9111 5.3 Expires extra space after comma invalid", cdn: origin, status: 200, resp: []string{date, "Expires: Mon,  02 Mar 2026 09:00:00 GMT"}, store: true, ttl: 0, reason: "invalid"},
		{name: "CCH-3 RFC 9111 5.3 Expires extra space before time invalid", cdn: origin, status: 200, resp: []string{date, "Expires: Mon, 02 Mar 2026  09:00:00 GMT"}, store: true, ttl: 0, reason: "invalid"},
		{name: "CCH-3 RFC 9111 5.3 Expires zone not GMT invalid", cdn: origin, status: 200, resp: []string{date, "Expires: Mon, 02 Mar 2026 09:00:00 UTC"}, store: true, ttl: 0, reason: "invalid"},
		{name: "CCH-3 RFC 9111 5.3 Expires 0 invalid", cdn: origin, status: 200, resp: []string{date, "Expires: 0"}, store: true, ttl: 0, reason: "invalid"},
		{name: "CCH-3 RFC 9111 4.2.1 several Expires field lines: stale", cdn: origin, status: 200, resp: []string{date, "Expires: " + in(time.Hour), "Expires: " + in(time.Hour)}, store: true, ttl: 0, reason: "several"},
		{name: "CCH-3 RFC 9110 5.6.7 Expires IMF-fixdate", cdn: origin, status: 200, resp: []string{date, "Expires: Mon, 02 Mar 2026 09:00:00 GMT"}, store: true, ttl: 21 * time.Hour, reason: "Expires"},
		{name: "CCH-3 RFC 9110 5.6.7 Expires rfc850-date", cdn: origin, status: 200, resp: []string{date, "Expires: Monday, 02-Mar-26 09:00:00 GMT"}, store: true, ttl: 21 * time.Hour, reason: "Expires"},
		{name: "CCH-3 RFC 9110 5.6.7 Expires asctime-date", cdn: origin, status: 200, resp: []string{date, "Expires: Mon Mar  2 09:00:00 2026"}, store: true, ttl: 21 * time.Hour, reason: "Expires"},
		{name: "CCH-3 RFC 9110 5.6.7 Expires with surrounding whitespace", cdn: origin, status: 200, resp: []string{date, "Expires:  Mon, 02 Mar 2026 09:00:00 GMT "}, store: true, ttl: 21 * time.Hour, reason: "Expires"},
		{name: "CCH-3 Expires relative to Date not now", cdn: origin, status: 200, resp: []string{"Date: " + in(-time.Hour), "Expires: " + in(0)}, store: true, ttl: time.Hour},
		{name: "CCH-3 Expires without Date uses now", cdn: origin, status: 200, resp: []string{"Expires: " + in(time.Minute)}, store: true, ttl: time.Minute},
		{name: "CCH-3 Pragma no-cache ignored", cdn: static, status: 200, resp: []string{png, "Pragma: no-cache"}, store: true, ttl: 100 * time.Second},
		{name: "CCH-3 Pragma ignored, USE_ORIGIN_HEADERS", cdn: origin, status: 200, resp: []string{"Pragma: no-cache", "Cache-Control: max-age=9"}, store: true, ttl: 9 * time.Second},
		{name: "CCH-3 invalid max-age ignored", cdn: origin, status: 200, resp: []string{"Cache-Control: max-age=abc"}, reason: "heuristic"},
		{name: "CCH-3 invalid s-maxage falls back to max-age", cdn: origin, status: 200, resp: []string{"Cache-Control: s-maxage=-1, max-age=7"}, store: true, ttl: 7 * time.Second},
		{name: "CCH-3 duplicate max-age first wins", cdn: origin, status: 200, resp: []string{"Cache-Control: max-age=7", "Cache-Control: max-age=70"}, store: true, ttl: 7 * time.Second},
		{name: "CCH-3 quoted max-age", cdn: origin, status: 200, resp: []string{`Cache-Control: max-age="8"`}, store: true, ttl: 8 * time.Second},
		{name: "CCH-3 huge max-age capped at 2^31 s", cdn: origin, status: 200, resp: []string{"Cache-Control: max-age=99999999999999999999"}, store: true, ttl: 2147483648 * time.Second},
		{name: "CCH-3 directive names case-insensitive", cdn: origin, status: 200, resp: []string{"Cache-Control: Max-Age=11"}, store: true, ttl: 11 * time.Second},
		// CCH-4.
		{name: "CCH-4 no-cache stored, revalidate each use", cdn: origin, status: 200, resp: []string{"Cache-Control: no-cache"}, store: true, ttl: 0, noCach: true, reason: "CCH-4"},
		{name: "CCH-4 no-cache with max-age", cdn: origin, status: 200, resp: []string{"Cache-Control: no-cache, max-age=60"}, store: true, ttl: time.Minute, noCach: true},
		{name: "CCH-4 no-cache on static keeps defaultTtl", cdn: static, status: 200, resp: []string{png, "Cache-Control: no-cache"}, store: true, ttl: 100 * time.Second, noCach: true},
		{name: "CCH-4 no-cache on non-static", cdn: static, status: 200, resp: []string{html, `Cache-Control: no-cache="Set-Cookie2"`}, store: true, ttl: 0, noCach: true},
		{name: "CCH-4 must-revalidate", cdn: origin, status: 200, resp: []string{"Cache-Control: max-age=60, must-revalidate"}, store: true, ttl: time.Minute, mustRe: true},
		{name: "CCH-4 proxy-revalidate", cdn: origin, status: 200, resp: []string{"Cache-Control: max-age=60, proxy-revalidate"}, store: true, ttl: time.Minute, mustRe: true},
		// CCH-5: negative caching off.
		{name: "CCH-5 off: 404 not stored", status: 404, resp: []string{png}, reason: "negative caching is off"},
		{name: "CCH-5 off: 404 with max-age not stored", cdn: origin, status: 404, resp: []string{"Cache-Control: max-age=60"}, reason: "negative caching is off"},
		{name: "CCH-5 off: 301 not stored", status: 301, resp: []string{"Location: /x", "Cache-Control: max-age=60"}, reason: "CCH-5"},
		{name: "CCH-5 off: 500 not stored", cdn: force, status: 500, reason: "CCH-5"},
		// CCH-5: defaults.
		{name: "CCH-5 default 300 10m", cdn: negDefault, status: 300, store: true, ttl: 10 * time.Minute, reason: "CCH-5"},
		{name: "CCH-5 default 301 10m", cdn: negDefault, status: 301, resp: []string{html}, store: true, ttl: 10 * time.Minute},
		{name: "CCH-5 default 308 10m", cdn: negDefault, status: 308, store: true, ttl: 10 * time.Minute},
		{name: "CCH-5 default 404 120s", cdn: negDefault, status: 404, resp: []string{html}, store: true, ttl: 120 * time.Second},
		{name: "CCH-5 default 410 120s", cdn: negDefault, status: 410, store: true, ttl: 120 * time.Second},
		{name: "CCH-5 default 451 120s", cdn: negDefault, status: 451, store: true, ttl: 120 * time.Second},
		{name: "CCH-5 default 405 60s", cdn: negDefault, status: 405, store: true, ttl: 60 * time.Second},
		{name: "CCH-5 default 501 60s", cdn: negDefault, status: 501, store: true, ttl: 60 * time.Second},
		{name: "CCH-5 default 302 not stored", cdn: negDefault, status: 302, resp: []string{"Cache-Control: max-age=60"}, reason: "not in the negative caching policy"},
		{name: "CCH-5 default 307 not stored", cdn: negDefault, status: 307, reason: "CCH-5"},
		{name: "CCH-5 default 500 not stored", cdn: negDefault, status: 500, reason: "CCH-5"},
		{name: "CCH-5 default 503 not stored", cdn: negDefault, status: 503, reason: "CCH-5"},
		{name: "CCH-5 default 400 not stored", cdn: negDefault, status: 400, reason: "CCH-5"},
		{name: "CCH-5 default 403 not stored", cdn: negDefault, status: 403, reason: "CCH-5"},
		{name: "CCH-5 origin max-age beats negative TTL", cdn: negDefault, status: 404, resp: []string{"Cache-Control: max-age=30"}, store: true, ttl: 30 * time.Second, reason: "max-age"},
		{name: "CCH-5 origin max-age capped at maxTtl", cdn: negDefault, status: 404, resp: []string{"Cache-Control: max-age=3000"}, store: true, ttl: 1000 * time.Second},
		{name: "CCH-5 origin max-age not capped in USE_ORIGIN_HEADERS", cdn: negOrigin, status: 404, resp: []string{"Cache-Control: max-age=3000"}, store: true, ttl: 3000 * time.Second},
		{name: "CCH-5 USE_ORIGIN_HEADERS no directives: table TTL", cdn: negOrigin, status: 410, store: true, ttl: 120 * time.Second},
		{name: "CCH-5 private 404 not stored", cdn: negDefault, status: 404, resp: []string{"Cache-Control: private"}, reason: "private"},
		{name: "CCH-5 no-cache 404 stored with table TTL", cdn: negDefault, status: 404, resp: []string{"Cache-Control: no-cache"}, store: true, ttl: 120 * time.Second, noCach: true},
		{name: "CCH-5 FORCE: table TTL overrides directives", cdn: negForce, status: 404, resp: []string{"Cache-Control: max-age=3000, private"}, store: true, ttl: 120 * time.Second},
		{name: "CCH-5 FORCE: 500 still not in table", cdn: negForce, status: 500, reason: "CCH-5"},
		// CCH-5: explicit policy lists exactly the codes cached.
		{name: "CCH-5 policy 404 own TTL", cdn: negPolicy, status: 404, store: true, ttl: 5 * time.Second},
		{name: "CCH-5 policy 302 listed", cdn: negPolicy, status: 302, store: true, ttl: 7 * time.Second},
		{name: "CCH-5 policy 503 TTL 0", cdn: negPolicy, status: 503, store: true, ttl: 0},
		{name: "CCH-5 policy: 410 default not applied", cdn: negPolicy, status: 410, reason: "not in the negative caching policy"},
		{name: "CCH-5 policy: 301 default not applied", cdn: negPolicy, status: 301, resp: []string{"Cache-Control: max-age=60"}, reason: "CCH-5"},
		{name: "CCH-5 policy: 200 unaffected", cdn: negPolicy, status: 200, resp: []string{png}, store: true, ttl: time.Hour},
		// CCH-6: Vary.
		{name: "CCH-6 Vary Accept-Encoding stored", status: 200, resp: []string{png, "Vary: Accept-Encoding"}, store: true, ttl: time.Hour},
		{name: "CCH-6 Vary Origin, Accept stored", status: 200, resp: []string{png, "Vary: origin, ACCEPT"}, store: true, ttl: time.Hour},
		{name: "CCH-6 Vary * not stored", status: 200, resp: []string{png, "Vary: *"}, reason: "CCH-6"},
		{name: "CCH-6 Vary User-Agent not stored", status: 200, resp: []string{png, "Vary: Accept", "Vary: User-Agent"}, reason: "user-agent"},
		{name: "CCH-6 Vary included header stored", cdn: varyPol, status: 200, resp: []string{png, "Vary: x-device"}, store: true, ttl: time.Hour},
		{name: "CCH-6 Vary under FORCE still checked", cdn: force, status: 200, resp: []string{png, "Vary: Cookie"}, reason: "CCH-6"},
		// clientTtl.
		{name: "CCH-2 clientTtl static default", cdn: client, status: 200, resp: []string{png}, store: true, ttl: 100 * time.Second, client: "public, max-age=30"},
		{name: "CCH-2 clientTtl clamps origin max-age", cdn: client, status: 200, resp: []string{png, "Cache-Control: max-age=50"}, store: true, ttl: 50 * time.Second, client: "public, max-age=30"},
		{name: "CCH-2 clientTtl keeps smaller origin max-age", cdn: client, status: 200, resp: []string{png, "Cache-Control: max-age=10, s-maxage=500"}, store: true, ttl: 500 * time.Second, mustRe: true, client: "public, max-age=10"},
		{name: "CCH-2 clientTtl FORCE min(clientTtl, defaultTtl)", cdn: clientForce, status: 200, resp: []string{html}, store: true, ttl: 100 * time.Second, client: "public, max-age=100"},
		{name: "CCH-2 clientTtl ignored in USE_ORIGIN_HEADERS", cdn: clientOrigin, status: 200, resp: []string{"Cache-Control: max-age=50"}, store: true, ttl: 50 * time.Second},
		{name: "CCH-2 clientTtl not set: empty", status: 200, resp: []string{png}, store: true, ttl: time.Hour},
		{name: "CCH-2 clientTtl not stored: empty", cdn: client, status: 200, resp: []string{html}, reason: "non-static"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := c.method
			if m == "" {
				m = http.MethodGet
			}
			r := httptest.NewRequest(m, "http://example.com/a", nil)
			for k, v := range hdr(c.req...) {
				r.Header[k] = v
			}
			d := New(c.cdn).Decide(r, c.status, hdr(c.resp...), now)
			if d.Store != c.store || (c.store && d.TTL != c.ttl) || d.MustRevalidate != c.mustRe || d.NoCache != c.noCach || d.ClientCacheControl != c.client {
				t.Errorf("got %+v, want store=%v ttl=%v mustRevalidate=%v noCache=%v client=%q", d, c.store, c.ttl, c.mustRe, c.noCach, c.client)
			}
			if !strings.Contains(strings.ToLower(d.Reason), strings.ToLower(c.reason)) {
				t.Errorf("reason %q, want it to contain %q", d.Reason, c.reason)
			}
			if !c.store && d.Reason == "" {
				t.Errorf("a refusal needs a reason")
			}
		})
	}
}

func TestDecideNilRequest(t *testing.T) {
	d := New(nil).Decide(nil, 200, hdr("Content-Type: image/png"), now)
	if !d.Store {
		t.Errorf("CCH-1: nil request treated as GET: %+v", d)
	}
}

func TestStaticContentType(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/css": true, "TEXT/CSS; charset=utf-8": true, "text/javascript": true,
		"application/javascript": true, "application/x-javascript": true,
		"font/woff2": true, "image/svg+xml": true, "image/webp": true, "video/mp4": true, "audio/mpeg": true,
		"application/pdf": true, "application/vnd.apple.mpegurl": true, "application/dash+xml": true,
		"text/html": false, "application/json": false, "text/plain": false, "": false,
		"application/octet-stream": false, "image": false, "image/": false, "imagex/png": false,
		"image/png; bad=": true,
	} {
		if got := StaticContentType(ct); got != want {
			t.Errorf("CCH-2: StaticContentType(%q) = %v, want %v", ct, got, want)
		}
	}
}

func TestParseCacheControl(t *testing.T) {
	cc := ParseCacheControl(hdr(`Cache-Control: no-cache="Set-Cookie, X-A", Max-Age=5`, "Cache-Control: PUBLIC,,  "))
	if cc["no-cache"] != "Set-Cookie, X-A" || cc["max-age"] != "5" || !cc.Has("public") || len(cc) != 3 {
		t.Errorf("CCH-3: got %#v", cc)
	}
}

func TestParseCacheControlQuotedComma(t *testing.T) {
	cc := ParseCacheControl(hdr(`Cache-Control: private="a\"b, c", max-age=3`))
	if cc["private"] != `a"b, c` || cc["max-age"] != "3" {
		t.Errorf("CCH-3: got %#v", cc)
	}
}

func TestCacheableStatus(t *testing.T) {
	want := []int{200, 203, 204, 206, 300, 301, 302, 307, 308, 400, 403, 404, 405, 410, 451, 500, 501, 502, 503, 504}
	n := 0
	for s := 100; s < 600; s++ {
		if CacheableStatus(s) {
			if n >= len(want) || want[n] != s {
				t.Fatalf("CCH-1: unexpected cacheable status %d", s)
			}
			n++
		}
	}
	if n != len(want) {
		t.Errorf("CCH-1: %d cacheable statuses, want %d", n, len(want))
	}
}
