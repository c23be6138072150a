package headervars

import (
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
)

func TestParseRender(t *testing.T) {
	req, _ := http.NewRequest("GET", "http://media.example.com/v", nil)
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Add("X-Forwarded-For", "192.0.2.1")
	req.Header.Add("X-Forwarded-For", "198.51.100.2")
	req.Header.Set("User-Agent", "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0) AppleWebKit/605.1.15 Version/17.0 Mobile/15E148 Safari/604.1")
	tlsReq := req.Clone(req.Context())
	tlsReq.TLS = &tls.ConnectionState{Version: tls.VersionTLS13, CipherSuite: tls.TLS_AES_128_GCM_SHA256, ServerName: "media.example.com"}
	f := &Facts{CacheStatus: "hit", CacheID: "edge-1", RequestID: "r-7", Geo: &Geo{Region: "FR", Subdivision: "FRIDF", City: "Paris", CityLatLong: "48.8566,2.3522"}, Request: req}
	tf := *f
	tf.Request = tlsReq
	for _, tc := range []struct {
		value, want string
		f           *Facts
	}{
		{"static", "static", f},
		{"", "", f},
		{"{cdn_cache_status}", "hit", f},
		{"status={cdn_cache_status}; id={cdn_cache_id}", "status=hit; id=edge-1", f},
		{"{client_region}/{client_region_subdivision}/{client_city}/{client_city_lat_long}", "FR/FRIDF/Paris/48.8566,2.3522", f},
		{"{original_request_id}", "r-7", f},
		{"{origin_request_header}", "https://app.example.com", f},
		{"{x_forwarded_for_request_header}", "192.0.2.1, 198.51.100.2", f},
		{"{user_agent_family} {device_request_type}", "Safari MOBILE", f},
		{"[{tls_version}|{tls_cipher_suite}|{tls_sni_hostname}]", "[||]", f}, // cleartext
		{"{tls_version} {tls_cipher_suite} {tls_sni_hostname}", "TLSv1.3 TLS_AES_128_GCM_SHA256 media.example.com", &tf},
		{"{client_region}", "", &Facts{}}, // no geography configured
		{"{client_rtt_msec}", "", f},
		{"{ not a var } {} {X} {{cdn_cache_status}}", "{ not a var } {} {X} {hit}", f},
	} {
		tmpl, err := Parse(tc.value)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.value, err)
			continue
		}
		if got := tmpl.Render(tc.f); got != tc.want {
			t.Errorf("Render(%q) = %q, want %q", tc.value, got, tc.want)
		}
		if tmpl.Static() != (Static(tc.value) == "") {
			t.Errorf("%q: Template.Static() = %v but Static() = %q", tc.value, tmpl.Static(), Static(tc.value))
		}
	}
}

func TestParseUnknown(t *testing.T) {
	for _, v := range []string{"{cdn_cache_statu}", "x {client_country} y"} {
		_, err := Parse(v)
		if err == nil || !strings.Contains(err.Error(), "unknown header variable") || !strings.Contains(err.Error(), "{cdn_cache_status}") {
			t.Errorf("Parse(%q) = %v, want an unknown-variable error listing the known ones", v, err)
		}
	}
}

func TestStatic(t *testing.T) {
	for v, want := range map[string]string{"Media CDN": "", "a {client_region} b": "{client_region}", "{unknown_thing}": "{unknown_thing}", "{}": ""} {
		if got := Static(v); got != want {
			t.Errorf("Static(%q) = %q, want %q", v, got, want)
		}
	}
}

// Rendering a static value does not allocate; a dynamic one does not
// parse again.
func TestRenderAllocs(t *testing.T) {
	st, _ := Parse("no variables here")
	f := &Facts{CacheStatus: "miss"}
	if n := testing.AllocsPerRun(100, func() { _ = st.Render(f) }); n != 0 {
		t.Errorf("static Render allocates %v times", n)
	}
	dy, _ := Parse("{cdn_cache_status}")
	if n := testing.AllocsPerRun(100, func() { _ = dy.Render(f) }); n > 1 {
		t.Errorf("dynamic Render allocates %v times, want at most 1", n)
	}
}
