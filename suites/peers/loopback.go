package peers

import "github.com/edgeconform/edgeconform/suites/topology"

// The names of the loopback topology the runner gives every peer. Origin
// addresses are the IP, so no peer needs a resolver; the other names
// travel only as Host and SNI (the emulators' test CA issues a certificate
// for whatever SNI arrives), except AltHost, which redirect Locations
// name and "localhost" resolves everywhere.
const (
	LoopbackClientHost        = "edge.test"
	LoopbackOriginHost        = "127.0.0.1"
	LoopbackAltHost           = "localhost"
	LoopbackRouteRewriteHost  = "route.origin.test"
	LoopbackOriginRewriteHost = "own.origin.test"
)

// LoopbackParams are the topology parameters for peers on this machine,
// with the emulator listeners' ports.
func LoopbackParams(prof topology.Profile, ports map[string]int) topology.Params {
	return topology.Params{
		Profile: prof, ClientHost: LoopbackClientHost, OriginHost: LoopbackOriginHost, AltHost: LoopbackAltHost,
		RouteRewriteHost: LoopbackRouteRewriteHost, OriginRewriteHost: LoopbackOriginRewriteHost, Ports: ports,
	}
}

// LoopbackResolve is Env.Resolve for the loopback topology.
func LoopbackResolve() map[string]string {
	return map[string]string{LoopbackAltHost: "127.0.0.1"}
}
