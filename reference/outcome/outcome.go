// Package outcome is the reference edge cache's one model of what a request
// to a parent tier (an origin attempt through package fetch, or a fill to a
// shield node through package shield) produced: the attempt's typed
// [Outcome] and the RFC 9209 proxy-status error type ([Reason]) of a
// synthesized 502/504. Producers build values, consumers switch on
// [Kind]; the log value ([Outcome.String]) and the metric label
// ([Outcome.Label]) are derived here, so nothing builds or parses strings.
package outcome

// Reason is an RFC 9209 proxy-status error type ("" for none). The
// transport's reasons (dns_error, connection_refused, tls_certificate_error,
// ...) are named by package upstream's error classification; the ones the
// reference chooses itself are constants here.
type Reason string

// RFC 9209 (section 2.3) error types the reference names itself.
const (
	None                    Reason = ""
	DestinationUnavailable  Reason = "destination_unavailable"
	ConnectionTimeout       Reason = "connection_timeout"
	ConnectionRefused       Reason = "connection_refused"
	HTTPResponseTimeout     Reason = "http_response_timeout"
	HTTPResponseIncomplete  Reason = "http_response_incomplete"
	HTTPProtocolError       Reason = "http_protocol_error"
	ProxyConfigurationError Reason = "proxy_configuration_error"
	ConnectionLimitReached  Reason = "connection_limit_reached"
	ConnectionReadTimeout   Reason = "connection_read_timeout"
	ProxyInternalError      Reason = "proxy_internal_error"
	// ClientGone is not in RFC 9209: the client went away before an
	// answer (INT).
	ClientGone Reason = "client_gone"
)

// Kind is what an attempt produced.
type Kind int

const (
	// Usable: a response to hand on (ATT-6, ATT-10).
	Usable Kind = iota
	// Retry: the status matched one of the origin's retry conditions
	// (ATT-5); Outcome.Condition names it.
	Retry
	// ConnectFailure: no response headers, a CONNECT_FAILURE (ATT-5,
	// TMO-1); Outcome.Reason says which.
	ConnectFailure
	// Redirect: a listed redirect, to be followed (RDR-1).
	Redirect
	// Timeout: the maxAttemptsTimeout deadline passed during the attempt
	// (ATT-9, TMO-2), or a shield did not answer in time.
	Timeout
	// Error: no response, not a connect failure; Outcome.Reason says why.
	Error
	// Canceled: the client went away.
	Canceled
)

var kindNames = [...]string{
	Usable: "usable", Retry: "retry", ConnectFailure: "connect_failure", Redirect: "redirect",
	Timeout: "timeout", Error: "error", Canceled: "canceled",
}

// String is the kind's name, the metric label of edgecache_origin_attempts_total.
func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "error"
	}
	return kindNames[k]
}

// Outcome is one attempt's result.
type Outcome struct {
	Kind      Kind
	Condition string // Retry: the retry condition the status matched
	Reason    Reason // ConnectFailure, Error, Timeout, Canceled: the proxy status
}

// String is the attempt log record's outcome field: "usable",
// "retry:<CONDITION>", "connect_failure:<reason>", "redirect", "timeout",
// "canceled" or "error:<reason>".
func (o Outcome) String() string {
	switch o.Kind {
	case Retry:
		return "retry:" + o.Condition
	case ConnectFailure, Error:
		return o.Kind.String() + ":" + string(o.Reason)
	}
	return o.Kind.String()
}

// Label is the outcome's kind without details, the metric label value
// (label values stay few).
func (o Outcome) Label() string { return o.Kind.String() }

// MarshalText makes an Outcome log and encode as its String.
func (o Outcome) MarshalText() ([]byte, error) { return []byte(o.String()), nil }
