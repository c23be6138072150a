package outcome

import (
	"encoding/json"
	"testing"
)

// The log values and metric labels are read by the suites and the tests
// (LOG-1, LOG-2): they must stay exactly these.
func TestStringAndLabel(t *testing.T) {
	for _, tc := range []struct {
		o          Outcome
		str, label string
	}{
		{Outcome{Kind: Usable}, "usable", "usable"},
		{Outcome{Kind: Retry, Condition: "NOT_FOUND", Reason: DestinationUnavailable}, "retry:NOT_FOUND", "retry"},
		{Outcome{Kind: ConnectFailure, Reason: ConnectionRefused}, "connect_failure:connection_refused", "connect_failure"},
		{Outcome{Kind: Redirect}, "redirect", "redirect"},
		{Outcome{Kind: Timeout, Reason: ConnectionTimeout}, "timeout", "timeout"},
		{Outcome{Kind: Canceled, Reason: ClientGone}, "canceled", "canceled"},
		{Outcome{Kind: Error, Reason: HTTPProtocolError}, "error:http_protocol_error", "error"},
		{Outcome{Kind: Kind(99), Reason: "x"}, "error", "error"},
	} {
		if got := tc.o.String(); got != tc.str {
			t.Errorf("%+v.String() = %q, want %q", tc.o, got, tc.str)
		}
		if got := tc.o.Label(); got != tc.label {
			t.Errorf("%+v.Label() = %q, want %q", tc.o, got, tc.label)
		}
		b, err := json.Marshal(tc.o)
		if err != nil || string(b) != `"`+tc.str+`"` {
			t.Errorf("json.Marshal(%+v) = %s, %v; want %q", tc.o, b, err, tc.str)
		}
	}
}
