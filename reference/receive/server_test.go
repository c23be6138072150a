package receive

import (
	"net/http/httptest"
	"testing"
)

// A refusal attached with WithRejection is what Check answers, before
// anything else about the request (which is a placeholder).
func TestCheckReturnsAttachedRejection(t *testing.T) {
	l := DefaultLimits()
	r := httptest.NewRequest("GET", "/x", nil)
	if e := Check(r, l); e != nil {
		t.Fatalf("a plain request: %v", e)
	}
	want := l.TargetTooLong(l.MaxURLBytes + 1)
	r = r.WithContext(WithRejection(r.Context(), want))
	if got := Check(r, l); got != want {
		t.Errorf("Check = %v, want the attached %v", got, want)
	}
}

// The head checks a parsing server calls answer as the Listener's scan
// does: the status, and nil within the limits.
func TestHeadChecks(t *testing.T) {
	l := DefaultLimits()
	cases := []struct {
		name string
		e    *Error
		want int
	}{
		{"target at the limit", l.TargetTooLong(l.MaxURLBytes), 0},
		{"target over", l.TargetTooLong(l.MaxURLBytes + 1), 414},
		{"request line over", l.LineTooLong(l.MaxURLBytes + 1025), 414},
		{"fields at the limit", l.FieldsTooLarge(l.MaxHeaderFields, l.MaxHeaderBytes), 0},
		{"too many fields", l.FieldsTooLarge(l.MaxHeaderFields+1, 0), 431},
		{"too many bytes", l.FieldsTooLarge(1, l.MaxHeaderBytes+1), 431},
		{"CL and TE", Framing(1, 1, false), 400},
		{"TE on 1.0", Framing(0, 1, true), 400},
		{"CL on 1.0", Framing(1, 0, true), 0},
		{"obs-fold", ObsFold(), 400},
	}
	for _, c := range cases {
		got := 0
		if c.e != nil {
			got = c.e.Status
		}
		if got != c.want {
			t.Errorf("%s: %v, want status %d", c.name, c.e, c.want)
		}
	}
}
