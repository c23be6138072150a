// Package rules is the emulator's scripting vocabulary: a Rule matches
// requests, has a finite budget, and carries the actions to take, in the
// order of an exchange (hold, delay, status and headers, body, and how the
// body ends). The same vocabulary can be written as JSON/YAML (the control
// API, the CLI's file) or encoded in a request path (/_emu/status=503/...),
// so behaviour can be driven through a CDN that forwards only paths.
package rules

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Rule scripts the answer to matching requests.
type Rule struct {
	// ID names the rule; the table assigns "r1", "r2", ... when empty.
	ID    string `json:"id,omitempty"`
	Match Match  `json:"match"`
	// Times is how many matching requests the rule fires for (default 1).
	// A fault cannot cause an endless retry storm unless Unlimited says so.
	Times int `json:"times,omitempty"`
	// Unlimited makes the rule fire for every matching request.
	Unlimited bool `json:"unlimited,omitempty"`
	// Probability, if set (0 < p <= 1), makes the rule fire for that share
	// of the matching requests, chosen by Seed: the k-th matching request
	// fires or not as a pure function of (Seed, k), so a soak test fails
	// the same requests on every run. Times still bounds how often it fires.
	Probability float64 `json:"probability,omitempty"`
	// Seed picks which requests a probabilistic rule fires for.
	Seed   uint64 `json:"seed,omitempty"`
	Action Action `json:"action"`
}

// Chance reports whether a rule with probability p and seed fires for its
// k-th matching request (k from 1): splitmix64 of (seed, k) against p.
func Chance(seed uint64, k int64, p float64) bool {
	if p <= 0 || p >= 1 {
		return true // not probabilistic, or always
	}
	return Unit(seed, k) < p
}

// Unit is a uniform draw in [0, 1), a pure function of (seed, k): the
// splitmix64 mix of seed + k times the golden ratio.
func Unit(seed uint64, k int64) float64 {
	z := seed + uint64(k)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// Match selects requests. Every set field must match.
type Match struct {
	Listener   string `json:"listener,omitempty"`
	Method     string `json:"method,omitempty"`
	Path       string `json:"path,omitempty"`       // exact request path
	PathPrefix string `json:"pathPrefix,omitempty"` // request path prefix
	// Headers maps a header name to the value it must have (exact, any of
	// its values); the value "*" only requires the header to be present.
	Headers map[string]string `json:"headers,omitempty"`
	// Nth skips the first Nth-1 requests that match the rest, so the rule
	// first fires on the Nth (1-based; 0 means 1).
	Nth int `json:"nth,omitempty"`
}

// Action is what the emulator does with a request the rule fired for.
// Without Status, Body, BodySize or Redirect, the path's object is served
// (ranges and conditional requests included) and the other actions shape
// that response.
type Action struct {
	Hold  *Hold    `json:"hold,omitempty"`
	Delay Duration `json:"delay,omitempty"` // before response headers

	Status   int               `json:"status,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`  // set on the response, over the object's
	Body     *string           `json:"body,omitempty"`     // fixed body
	BodySize *int64            `json:"bodySize,omitempty"` // synthetic body of N bytes
	Redirect *Redirect         `json:"redirect,omitempty"`

	Omit    []string `json:"omit,omitempty"`    // response headers to leave out
	Corrupt []string `json:"corrupt,omitempty"` // response headers to send malformed

	Drip  *Drip    `json:"drip,omitempty"`  // pace the body
	Shape *Shaping `json:"shape,omitempty"` // bandwidth, latency, slices for the body

	// At most one of these ends the exchange abnormally.
	Stall     *Cut `json:"stall,omitempty"`     // stop sending after AfterBytes, hold the connection open
	Truncate  *Cut `json:"truncate,omitempty"`  // close the connection after AfterBytes (required)
	Reset     *Cut `json:"reset,omitempty"`     // TCP RST before headers, or after AfterBytes
	RSTStream *Cut `json:"rstStream,omitempty"` // h2 RST_STREAM with Code
	GoAway    *Cut `json:"goAway,omitempty"`    // h2 GOAWAY with Code, then close
}

// Hold is a barrier: matching requests wait until Count of them have arrived
// (all are released together) or the test releases the hold by name.
type Hold struct {
	Name    string   `json:"name,omitempty"`    // default: the rule's id
	Count   int      `json:"count,omitempty"`   // release when this many wait; 0 = only by an explicit release
	Timeout Duration `json:"timeout,omitempty"` // give up waiting and answer anyway (default 60s)
}

// Redirect answers with a 3xx and a Location.
type Redirect struct {
	Status   int    `json:"status,omitempty"` // 301, 302 (default), 303, 307 or 308
	Location string `json:"location"`
}

// Drip sends the body Bytes at a time, one piece per Every.
type Drip struct {
	Bytes int      `json:"bytes"`
	Every Duration `json:"every"`
}

// Cut says where an abnormal end happens. Without AfterBytes it happens
// before the response headers are sent.
type Cut struct {
	AfterBytes *int64 `json:"afterBytes,omitempty"`
	Code       string `json:"code,omitempty"` // h2 error code name, for rstStream and goAway
}

// Before reports whether the cut happens before the response headers.
func (c *Cut) Before() bool { return c.AfterBytes == nil }

// HeaderNames that can be omitted or corrupted.
var faultHeaders = []string{"ETag", "Last-Modified", "Date", "Content-Length", "Content-Range"}

// h2 error code names, in code order (RFC 9113 section 7).
var h2Codes = []string{"NO_ERROR", "PROTOCOL_ERROR", "INTERNAL_ERROR", "FLOW_CONTROL_ERROR",
	"SETTINGS_TIMEOUT", "STREAM_CLOSED", "FRAME_SIZE_ERROR", "REFUSED_STREAM", "CANCEL",
	"COMPRESSION_ERROR", "CONNECT_ERROR", "ENHANCE_YOUR_CALM", "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"}

// H2Code returns the numeric h2 error code for a name (case-insensitive).
// An empty name is CANCEL for RST_STREAM-like use; callers pick the default.
func H2Code(name string) (uint32, bool) {
	for i, n := range h2Codes {
		if strings.EqualFold(n, name) {
			return uint32(i), true
		}
	}
	return 0, false
}

// Duration is a time.Duration written as a Go duration string ("250ms", "2s").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"250ms\" or \"2s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// Ends returns the abnormal end the action asks for, if any: its
// directive (stall, truncate, reset, rstStream, goAway) and its Cut.
func (a *Action) Ends() (*Directive, *Cut) {
	for _, d := range EndDirectives() {
		if c := *d.cut(a); c != nil {
			return d, c
		}
	}
	return nil, nil
}

// NeedsH2 reports whether the action uses an h2-only fault.
func (a *Action) NeedsH2() bool {
	d, _ := a.Ends()
	return d != nil && d.H2Only
}

// ServesObject reports whether the response is the path's object (shaped by
// the other actions) rather than a scripted status/body/redirect.
func (a *Action) ServesObject() bool {
	return a.Status == 0 && a.Body == nil && a.BodySize == nil && a.Redirect == nil
}

// Budget returns how many times the rule fires; -1 for unlimited.
func (r *Rule) Budget() int {
	switch {
	case r.Unlimited:
		return -1
	case r.Times == 0:
		return 1
	}
	return r.Times
}
