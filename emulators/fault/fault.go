// Package fault is the emulator's one vocabulary of how an exchange ends:
// the rules ask for an End, the wire servers abort with one, and the
// journal records one. Adding a way to end an exchange starts here.
package fault

// End is how an exchange ended (or is to end).
type End string

// The ways an exchange ends, in the order of the documentation.
const (
	Pending    End = ""            // still running
	Complete   End = "complete"    // the whole response was sent
	Truncated  End = "truncated"   // connection closed (FIN) short of the declared body
	Reset      End = "reset"       // TCP reset (RST)
	RSTStream  End = "rst_stream"  // h2 RST_STREAM on the request's stream; the connection stays
	GoAway     End = "goaway"      // h2 GOAWAY, then the connection closes
	Stalled    End = "stalled"     // sending stopped, the connection held open until the client left
	ClientGone End = "client_gone" // the client went away first
	Error      End = "error"       // writing to the client failed, or a rule could not run
)

// Info describes one End.
type Info struct {
	End End
	// Abort is true for the ends a wire server produces on purpose
	// (wire.ResponseWriter.Abort takes exactly these).
	Abort bool
	// H2Only is true for the ends only h2 has.
	H2Only bool
	Doc    string
}

// Ends lists every End but Pending, in documentation order.
var Ends = []Info{
	{End: Complete, Doc: "the whole response was sent"},
	{End: Truncated, Abort: true, Doc: "the connection was closed (FIN, no TLS close_notify) short of the declared body"},
	{End: Reset, Abort: true, Doc: "the TCP connection was reset (RST)"},
	{End: RSTStream, Abort: true, H2Only: true, Doc: "h2 RST_STREAM on the request's stream; the connection stays up"},
	{End: GoAway, Abort: true, H2Only: true, Doc: "h2 GOAWAY, then the connection closed"},
	{End: Stalled, Doc: "sending stopped and the connection was held open until the client went away"},
	{End: ClientGone, Doc: "the client went away first"},
	{End: Error, Doc: "writing to the client failed, or a rule could not run (the note says why)"},
}

// Lookup returns the Info of e.
func Lookup(e End) (Info, bool) {
	for _, i := range Ends {
		if i.End == e {
			return i, true
		}
	}
	return Info{}, false
}

// IsAbort reports whether e is an end a wire server produces on purpose.
func (e End) IsAbort() bool {
	i, ok := Lookup(e)
	return ok && i.Abort
}

func (e End) String() string {
	if e == Pending {
		return "pending"
	}
	return string(e)
}
