package edge

import "github.com/edgeconform/edgeconform/reference/receive"

// WithLimits sets the receive step's limits (default
// receive.DefaultLimits()). Serve the edge with receive.Configure and
// receive.Listener on the same limits for the checks that need the raw
// bytes (HTTP/1.1 framing, obs-fold, the h2 reset limit).
func WithLimits(l receive.Limits) Option { return func(o *options) { o.limits = &l } }

func (o *options) receiveLimits() receive.Limits {
	if o.limits != nil {
		return *o.limits
	}
	return receive.DefaultLimits()
}

// ChecksReceive marks the server as running receive.Check itself
// (receive.Checking): receive.Configure then leaves it unwrapped, and
// refusals are logged as client requests (LOG-1) like any other.
func (s *Server) ChecksReceive() {}

// refuse is the receive step: it answers a request receive.Check refuses
// (400 for framing and Host, 414, 431) and reports whether it did. Nothing
// of a refused request reaches an origin.
func (s *Server) refuse(v *visit) bool {
	e := receive.Check(v.r, s.limits)
	if e == nil {
		return false
	}
	v.status, v.errText = e.Status, e.Reason
	receive.Answer(v.w, v.r, e)
	return true
}
