package receive

import (
	"errors"
	"fmt"
	"time"
)

// Limits bound what a client may send before the edge answers it itself.
// The zero value is not usable; start from DefaultLimits.
type Limits struct {
	// MaxHeaderBytes bounds the header section: the sum over field lines
	// of name, value and 4 bytes (": " and CRLF), Host included; more is
	// 431. The request line is bounded by MaxURLBytes instead.
	MaxHeaderBytes int
	// MaxHeaderFields bounds the number of field lines; more is 431.
	MaxHeaderFields int
	// MaxURLBytes bounds the request target (h2: :path); longer is 414.
	MaxURLBytes int
	// BodyPeekBytes is how much of a request body is read before anything
	// is forwarded, so that a framing error in it (a bad chunk size,
	// trailers) is a 400 that never reaches the origin.
	BodyPeekBytes int
	// H2MaxResets is how many RST_STREAM frames a client may send on one
	// h2 connection within H2ResetWindow; one more and the connection gets
	// GOAWAY ENHANCE_YOUR_CALM and is closed (rapid reset, CVE-2023-44487).
	// 0 turns the limit off.
	H2MaxResets   int
	H2ResetWindow time.Duration
}

// The defaults.
const (
	DefaultMaxHeaderBytes  = 64 << 10
	DefaultMaxHeaderFields = 256
	DefaultMaxURLBytes     = 16 << 10
	DefaultBodyPeekBytes   = 64 << 10
	DefaultH2MaxResets     = 100
	DefaultH2ResetWindow   = 10 * time.Second
)

// DefaultLimits are the limits edgecache serve uses without flags.
func DefaultLimits() Limits {
	return Limits{
		MaxHeaderBytes:  DefaultMaxHeaderBytes,
		MaxHeaderFields: DefaultMaxHeaderFields,
		MaxURLBytes:     DefaultMaxURLBytes,
		BodyPeekBytes:   DefaultBodyPeekBytes,
		H2MaxResets:     DefaultH2MaxResets,
		H2ResetWindow:   DefaultH2ResetWindow,
	}
}

// Validate reports every limit out of range, naming it.
func (l Limits) Validate() error {
	var errs []error
	check := func(name string, v, lo, hi int) {
		if v < lo || v > hi {
			errs = append(errs, fmt.Errorf("%s must be between %d and %d, got %d", name, lo, hi, v))
		}
	}
	check("max header bytes", l.MaxHeaderBytes, 1<<10, 16<<20)
	check("max header fields", l.MaxHeaderFields, 8, 100_000)
	check("max URL bytes", l.MaxURLBytes, 256, 16<<20)
	check("body peek bytes", l.BodyPeekBytes, 0, 16<<20)
	check("h2 max resets", l.H2MaxResets, 0, 1_000_000)
	if l.H2MaxResets > 0 && l.H2ResetWindow <= 0 {
		errs = append(errs, fmt.Errorf("h2 reset window must be positive, got %v", l.H2ResetWindow))
	}
	return errors.Join(errs...)
}

// headBudget is what net/http's own MaxHeaderBytes is set to: above both
// of this package's bounds, so that its answers (which name the limit)
// come first, and still a bound.
func (l Limits) headBudget() int { return l.MaxHeaderBytes + l.MaxURLBytes + 4<<10 }
