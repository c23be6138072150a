package policy

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/edgeconform/edgeconform/reference/config"
)

func TestKey(t *testing.T) {
	kp := func(k config.CacheKeyPolicy) *config.CDNPolicy { return &config.CDNPolicy{CacheKeyPolicy: &k} }
	type tc struct {
		name  string
		cdn   *config.CDNPolicy
		url   string
		host  string // overrides the request Host
		tls   bool
		hdrs  []string
		want  string
		equal string // another URL that must give the same key
	}
	cases := []tc{
		{name: "CCH-6 default host+path+sorted query", url: "http://Example.COM/a/b?z=1&a=2&m=3", want: "//example.com/a/b?a=2&m=3&z=1"},
		{name: "CCH-6 default no query", url: "http://example.com/a", want: "//example.com/a"},
		{name: "CCH-6 default empty query", url: "http://example.com/a?", want: "//example.com/a"},
		{name: "CCH-6 empty pairs dropped", url: "http://example.com/a?&b=1&&a", want: "//example.com/a?a&b=1"},
		{name: "CCH-6 repeated names sorted by value", url: "http://example.com/?a=2&b=0&a=1", want: "//example.com/?a=1&a=2&b=0"},
		{name: "CCH-6 order-insensitive", url: "http://example.com/p?x=1&y=2", equal: "http://example.com/p?y=2&x=1"},
		{name: "CCH-6 raw encoding kept", url: "http://example.com/a%20b?q=a%2Fb&p=%41", want: "//example.com/a%20b?p=%41&q=a%2Fb"},
		{name: "CCH-6 port stripped", url: "http://example.com:8080/a", want: "//example.com/a"},
		{name: "CCH-6 port ignored", url: "http://example.com:8080/a", equal: "http://EXAMPLE.com/a"},
		{name: "CCH-6 IPv6 host", url: "http://[::1]:8080/a", want: "//[::1]/a"},
		{name: "CCH-6 IPv6 host without port", url: "http://[::1]/a", want: "//[::1]/a"},
		{name: "CCH-6 Host header wins", url: "http://ignored.test/a", host: "Media.Example:443", want: "//media.example/a"},
		{name: "CCH-6 protocol not included by default", url: "https://example.com/a", equal: "http://example.com/a"},
		{name: "CCH-6 includeProtocol http", cdn: kp(config.CacheKeyPolicy{IncludeProtocol: true}), url: "http://example.com/a", want: "http://example.com/a"},
		{name: "CCH-6 includeProtocol https from URL", cdn: kp(config.CacheKeyPolicy{IncludeProtocol: true}), url: "https://example.com/a", want: "https://example.com/a"},
		{name: "CCH-6 includeProtocol https from TLS", cdn: kp(config.CacheKeyPolicy{IncludeProtocol: true}), url: "/a", host: "example.com", tls: true, want: "https://example.com/a"},
		{name: "CCH-6 excludeHost", cdn: kp(config.CacheKeyPolicy{ExcludeHost: true}), url: "http://a.example/p?b=1", want: "/p?b=1", equal: "http://b.example/p?b=1"},
		{name: "CCH-6 excludeHost + includeProtocol", cdn: kp(config.CacheKeyPolicy{ExcludeHost: true, IncludeProtocol: true}), url: "https://a.example/p", want: "https:/p"},
		{name: "CCH-6 excludeQueryString", cdn: kp(config.CacheKeyPolicy{ExcludeQueryString: true}), url: "http://example.com/p?b=1&a=2", want: "//example.com/p"},
		{name: "CCH-6 includedQueryParameters", cdn: kp(config.CacheKeyPolicy{IncludedQueryParameters: []string{"id", "v"}}), url: "http://example.com/p?v=2&utm=x&id=1&v=1", want: "//example.com/p?id=1&v=1&v=2"},
		{name: "CCH-6 includedQueryParameters none present", cdn: kp(config.CacheKeyPolicy{IncludedQueryParameters: []string{"id"}}), url: "http://example.com/p?utm=x", want: "//example.com/p"},
		{name: "CCH-6 excludedQueryParameters", cdn: kp(config.CacheKeyPolicy{ExcludedQueryParameters: []string{"utm", "a b"}}), url: "http://example.com/p?utm=x&b=2&a+b=3&a=1", want: "//example.com/p?a=1&b=2"},
		{name: "CCH-6 includedHeaderNames joined", cdn: kp(config.CacheKeyPolicy{IncludedHeaderNames: []string{"X-Device", "accept-language"}}), url: "http://example.com/p", hdrs: []string{"X-Device: tv", "X-Device: 4k", "Accept-Language: fr"}, want: "//example.com/p\nheader:accept-language=fr\nheader:x-device=tv,4k"},
		{name: "CCH-6 includedHeaderNames absent", cdn: kp(config.CacheKeyPolicy{IncludedHeaderNames: []string{"X-Device"}}), url: "http://example.com/p", want: "//example.com/p\nheader:x-device"},
		{name: "CCH-6 includedHeaderNames empty value differs from absent", cdn: kp(config.CacheKeyPolicy{IncludedHeaderNames: []string{"X-Device"}}), url: "http://example.com/p", hdrs: []string{"X-Device:"}, want: "//example.com/p\nheader:x-device="},
		{name: "CCH-6 includedCookieNames", cdn: kp(config.CacheKeyPolicy{IncludedCookieNames: []string{"sess", "ab"}}), url: "http://example.com/p", hdrs: []string{"Cookie: other=1; ab=B; sess=S"}, want: "//example.com/p\ncookie:ab=B\ncookie:sess=S"},
		{name: "CCH-6 includedCookieNames absent", cdn: kp(config.CacheKeyPolicy{IncludedCookieNames: []string{"ab"}}), url: "http://example.com/p", hdrs: []string{"Cookie: other=1"}, want: "//example.com/p\ncookie:ab"},
		{name: "CCH-6 other headers and cookies ignored by default", url: "http://example.com/p", hdrs: []string{"Cookie: a=1", "User-Agent: x"}, want: "//example.com/p"},
	}
	build := func(c tc, u string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, u, nil)
		if c.host != "" {
			r.Host = c.host
		}
		if c.tls {
			r.TLS = &tls.ConnectionState{}
		} else {
			r.TLS = nil
		}
		for k, v := range hdr(c.hdrs...) {
			r.Header[k] = v
		}
		return r
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New(c.cdn)
			got := p.Key(build(c, c.url))
			if c.want != "" && got != c.want {
				t.Errorf("Key = %q, want %q", got, c.want)
			}
			if c.equal != "" {
				if other := p.Key(build(c, c.equal)); other != got {
					t.Errorf("Key(%s) = %q, Key(%s) = %q: want equal", c.url, got, c.equal, other)
				}
			}
		})
	}
}

func TestVaryKey(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/p", nil)
	r.Header.Add("Accept-Encoding", "gzip")
	r.Header.Add("Accept-Encoding", "br")
	r.Header.Set("Origin", "https://o.example")
	r.Header.Set("X-Device", "tv")
	cases := []struct {
		name string
		vary []string
		want string
		ok   bool
	}{
		{"CCH-6 no Vary: base", nil, "B", true},
		{"CCH-6 empty Vary: base", []string{""}, "B", true},
		{"CCH-6 Accept-Encoding values joined", []string{"Accept-Encoding"}, "B\nvary:accept-encoding=gzip,br", true},
		{"CCH-6 sorted and de-duplicated names", []string{"Origin, accept-encoding", "ORIGIN"}, "B\nvary:accept-encoding=gzip,br\nvary:origin=https://o.example", true},
		{"CCH-6 absent header", []string{"Accept"}, "B\nvary:accept", true},
		{"CCH-6 Vary * not cacheable", []string{"Accept, *"}, "", false},
		{"CCH-6 User-Agent not allowed", []string{"User-Agent"}, "", false},
		{"CCH-6 included header not allowed without policy", []string{"X-Device"}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := VaryKey("B", c.vary, r)
			if got != c.want || ok != c.ok {
				t.Errorf("VaryKey = %q, %v; want %q, %v", got, ok, c.want, c.ok)
			}
		})
	}
	p := New(&config.CDNPolicy{CacheKeyPolicy: &config.CacheKeyPolicy{IncludedHeaderNames: []string{"X-Device"}}})
	if got, ok := p.VaryKey("B", []string{"x-device"}, r); !ok || got != "B\nvary:x-device=tv" {
		t.Errorf("CCH-6 included header in Vary: got %q, %v", got, ok)
	}
	a := r.Clone(r.Context())
	a.Header.Set("Accept-Encoding", "identity")
	k1, _ := VaryKey("B", []string{"Accept-Encoding"}, r)
	k2, _ := VaryKey("B", []string{"Accept-Encoding"}, a)
	if k1 == k2 {
		t.Errorf("CCH-6: different Accept-Encoding must give different keys")
	}
}
