package originemu

import (
	"fmt"
	"slices"
	"strings"
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

// WrongName is the only name in a tls-wrong-name listener's certificate.
const WrongName = "wrong-name.invalid"

func (p Profile) valid() bool { return slices.Contains(Profiles, p) }

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

// alpn is what the TLS listener offers.
func (p Profile) alpn() []string {
	switch p {
	case HTTPS:
		return []string{"http/1.1"}
	case H2:
		return []string{"h2"}
	}
	// Fault listeners offer both, so a client's ALPN choice never hides
	// the certificate fault behind a no_application_protocol alert.
	return []string{"h2", "http/1.1"}
}

// Scheme is the URL scheme clients use to reach the profile.
func (p Profile) Scheme() string {
	if p.TLS() {
		return "https"
	}
	return "http"
}

func profileNames() string {
	names := make([]string, len(Profiles))
	for i, p := range Profiles {
		names[i] = string(p)
	}
	return strings.Join(names, ", ")
}

func errUnknownProfile(p Profile) error {
	return fmt.Errorf("unknown profile %q (want one of %s)", p, profileNames())
}
