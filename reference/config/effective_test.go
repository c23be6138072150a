package config

import (
	"testing"
	"time"
)

func TestEffectiveDefaultsAndCaps(t *testing.T) {
	ten := Duration(10 * time.Second)
	c := &Config{Reference: &Extensions{RedirectAllowList: map[string][]string{"a": {"x.test"}}}}
	for _, tc := range []struct {
		name string
		o    Origin
		want func(EffectiveOrigin) bool
	}{
		{"defaults", Origin{Name: "a", OriginAddress: "a.test"}, func(e EffectiveOrigin) bool {
			return e.Protocol == ProtocolHTTP2 && e.Port == 443 && e.MaxAttempts == 1 && len(e.RetryConditions) == 1 &&
				e.RetryConditions[0] == RetryConnectFailure && e.ConnectTimeout == 5*time.Second && e.MaxAttemptsTimeout == 15*time.Second &&
				e.ReadTimeout == 15*time.Second && e.ResponseTimeout == 30*time.Second && e.RedirectAllowList[0] == "x.test"
		}},
		// PRT-3: default ports 443 for HTTP2 (above) and HTTPS, 80 for HTTP.
		{"http port", Origin{OriginAddress: "a.test", Protocol: ProtocolHTTP}, func(e EffectiveOrigin) bool { return e.Port == 80 }},
		{"https port", Origin{OriginAddress: "a.test", Protocol: ProtocolHTTPS}, func(e EffectiveOrigin) bool { return e.Port == 443 }},
		{"read capped by response (TMO-5)", Origin{OriginAddress: "a.test", Timeout: &OriginTimeout{ResponseTimeout: &ten}}, func(e EffectiveOrigin) bool {
			return e.ReadTimeout == 10*time.Second && e.ResponseTimeout == 10*time.Second
		}},
		{"redirect codes", Origin{OriginAddress: "a.test", OriginRedirect: &OriginRedirect{RedirectConditions: []string{"FOUND", "PERMANENT_REDIRECT"}}}, func(e EffectiveOrigin) bool {
			return len(e.RedirectCodes) == 2 && e.RedirectCodes[0] == 302 && e.RedirectCodes[1] == 308
		}},
		{"override action", Origin{OriginAddress: "a.test", OriginOverrideAction: &OriginOverrideAction{
			URLRewrite:   &OriginURLRewrite{HostRewrite: "h.test"},
			HeaderAction: &OriginHeaderAction{RequestHeadersToAdd: []HeaderToAdd{{HeaderName: "X", HeaderValue: "1"}}},
		}}, func(e EffectiveOrigin) bool { return e.HostRewrite == "h.test" && len(e.RequestHeaders) == 1 }},
	} {
		if got := c.Effective(tc.o); !tc.want(got) {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}
}

// Enumerations are normalized once, at load, so that the request path
// folds no case (issue #13 item 6): Effective upper-cases them.
func TestEffectiveNormalizesEnums(t *testing.T) {
	c := &Config{}
	e := c.Effective(Origin{Name: "o", OriginAddress: "o.example.com", RetryConditions: []string{"http_5xx", "Not_Found"},
		OriginRedirect: &OriginRedirect{RedirectConditions: []string{"found"}}})
	if len(e.RetryConditions) != 2 || e.RetryConditions[0] != RetryHTTP5xx || e.RetryConditions[1] != RetryNotFound {
		t.Errorf("RetryConditions = %v", e.RetryConditions)
	}
	if len(e.RedirectCodes) != 1 || e.RedirectCodes[0] != 302 {
		t.Errorf("RedirectCodes = %v", e.RedirectCodes)
	}
}
