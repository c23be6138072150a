package originemu

import "github.com/edgeconform/edgeconform/emulators/emuapi"

// Profile is what a listener does with a connection (emuapi.Profile).
type Profile = emuapi.Profile

// Listener profiles.
const (
	HTTP  = emuapi.HTTP  // cleartext HTTP/1.1
	H2C   = emuapi.H2C   // cleartext h2 with prior knowledge
	HTTPS = emuapi.HTTPS // TLS offering only http/1.1, never h2
	H2    = emuapi.H2    // TLS, strictly h2: a client not offering h2 is refused at the handshake

	TLSExpired   = emuapi.TLSExpired   // certificate expired yesterday
	TLSWrongName = emuapi.TLSWrongName // certificate for another name
	TLSUntrusted = emuapi.TLSUntrusted // certificate from a CA clients do not trust

	Refuse    = emuapi.Refuse    // nothing accepts: connection refused
	Blackhole = emuapi.Blackhole // TCP accepted, never answered
	SYNDrop   = emuapi.SYNDrop   // the accept queue is full: the dial itself times out
)

// Profiles lists every profile, in documentation order.
var Profiles = emuapi.Profiles

// WrongName is the only name in a tls-wrong-name listener's certificate.
const WrongName = "wrong-name.invalid"

// alpn is what a TLS listener in profile p offers.
func alpn(p Profile) []string {
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

func profileNames() string { return emuapi.ProfileNames() }

func errUnknownProfile(p Profile) error { return emuapi.ErrUnknownProfile(p) }
