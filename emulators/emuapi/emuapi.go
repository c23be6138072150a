// Package emuapi holds the types of the emulator's control API: what the
// server (packages originemu and control), the Go client (emuclient) and
// the CLI exchange. It imports only the vocabulary packages (rules,
// journal, objects), so a client program does not link the server.
package emuapi

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

// Profile is what a listener does with a connection.
type Profile string

// Listener profiles.
const (
	HTTP  Profile = "http"  // cleartext HTTP/1.1
	H2C   Profile = "h2c"   // cleartext h2 with prior knowledge
	HTTPS Profile = "https" // TLS offering only http/1.1, never h2
	H2    Profile = "h2"    // TLS, strictly h2: a client not offering h2 is refused at the handshake

	TLSExpired   Profile = "tls-expired"    // certificate expired yesterday
	TLSWrongName Profile = "tls-wrong-name" // certificate for another name
	TLSUntrusted Profile = "tls-untrusted"  // certificate from a CA clients do not trust

	Refuse    Profile = "refuse"    // nothing accepts: connection refused
	Blackhole Profile = "blackhole" // TCP accepted, never answered
	SYNDrop   Profile = "syn-drop"  // the accept queue is full: the dial itself times out
)

// Profiles lists every profile, in documentation order.
var Profiles = []Profile{HTTP, H2C, HTTPS, H2, TLSExpired, TLSWrongName, TLSUntrusted, Refuse, Blackhole, SYNDrop}

// Valid reports whether p is a known profile.
func (p Profile) Valid() bool { return slices.Contains(Profiles, p) }

// TLS reports whether the profile speaks TLS.
func (p Profile) TLS() bool {
	switch p {
	case HTTPS, H2, TLSExpired, TLSWrongName, TLSUntrusted:
		return true
	}
	return false
}

// Serves reports whether the profile answers HTTP requests at all.
func (p Profile) Serves() bool {
	switch p {
	case Refuse, Blackhole, SYNDrop:
		return false
	}
	return true
}

// MaySpeakH2 reports whether requests on this profile can arrive over h2.
func (p Profile) MaySpeakH2() bool {
	switch p {
	case H2, H2C, TLSExpired, TLSWrongName, TLSUntrusted:
		return true
	}
	return false
}

// Scheme is the URL scheme clients use to reach the profile.
func (p Profile) Scheme() string {
	if p.TLS() {
		return "https"
	}
	return "http"
}

// ProfileNames is the profiles' names, comma-separated.
func ProfileNames() string {
	names := make([]string, len(Profiles))
	for i, p := range Profiles {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

// ErrUnknownProfile says p is no profile.
func ErrUnknownProfile(p Profile) error {
	return fmt.Errorf("unknown profile %q (want one of %s)", p, ProfileNames())
}

// ListenerInfo describes a running listener.
type ListenerInfo struct {
	Name string `json:"name"`
	// Profile is what the listener was started as; State is what it does
	// now (the same unless a StateChange changed it), since Since, until
	// Until when the change has a duration.
	Profile Profile   `json:"profile"`
	State   Profile   `json:"state"`
	Since   time.Time `json:"since,omitzero"`
	Until   time.Time `json:"until,omitzero"`
	Addr    string    `json:"addr"`
	URL     string    `json:"url"`
	// Shaping is the connections' shaping, if any.
	Shaping *rules.Shaping `json:"shaping,omitempty"`
}

// Serving names a listener's own profile in a StateChange: back to what it
// was started as.
const Serving Profile = "serving"

// What a state change does to the listener's open connections.
const (
	KeepConns  = "keep"  // they go on as they were (the default)
	ResetConns = "reset" // each is closed with a TCP RST
	StallConns = "stall" // nothing more is read or written on them until the next change
)

// StateChange switches a listener to another profile at runtime, on the
// same address (PUT /v1/listeners/{name}/state).
type StateChange struct {
	// State is a profile, or Serving for the listener's own.
	State Profile `json:"state"`
	// For, if set, is how long the state lasts; then the listener goes
	// back to the state it had before this change.
	For rules.Duration `json:"for,omitempty"`
	// Existing says what happens to open connections: KeepConns (default),
	// ResetConns or StallConns.
	Existing string `json:"existing,omitempty"`
}

// HoldStatus is a barrier with the requests waiting at it.
type HoldStatus struct {
	Name    string `json:"name"`
	Waiting int    `json:"waiting"`
	Count   int    `json:"count"` // releases at this many; 0 = only explicitly
}

// Limits of the control API.
const (
	// MaxBodyBytes bounds a request body; a larger one gets 413.
	MaxBodyBytes = 1 << 20
	// DefaultWaitTimeout is how long /v1/journal/wait waits without a
	// timeout parameter.
	DefaultWaitTimeout = 10 * time.Second
	// MaxWaitTimeout is the longest timeout /v1/journal/wait accepts.
	MaxWaitTimeout = 5 * time.Minute
)

// ErrorResponse is the body of every error answer.
type ErrorResponse struct {
	Error string `json:"error"`
	// Fields names each bad field or query parameter.
	Fields []rules.FieldError `json:"fields,omitempty"`
	// Matched and Requests are set by a /v1/journal/wait that timed out:
	// how many requests satisfied the wait, and the matching requests.
	Matched  *int              `json:"matched,omitempty"`
	Requests []journal.Request `json:"requests,omitempty"`
}

// RulesResponse answers POST /v1/rules.
type RulesResponse struct {
	Rules []rules.Rule `json:"rules"`
}

// DeletedResponse answers DELETE /v1/rules.
type DeletedResponse struct {
	Deleted int `json:"deleted"`
}

// WaitResponse answers a satisfied /v1/journal/wait.
type WaitResponse struct {
	Requests []journal.Request `json:"requests"`
}

// ReleaseResponse answers POST /v1/holds/{name}/release.
type ReleaseResponse struct {
	Released int `json:"released"`
}

// HealthResponse answers GET /v1/health.
type HealthResponse struct {
	Status string `json:"status"`
}
