package rules

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// Shaping slows a link down, as toxiproxy's toxics do but on the
// emulator's own sockets. On a listener it applies to every connection
// (and can be changed at runtime); on a rule, to that response's body.
type Shaping struct {
	// Latency is added before each write to the client; Jitter adds up to
	// that much more (uniform, from Seed).
	Latency Duration `json:"latency,omitempty"`
	Jitter  Duration `json:"jitter,omitempty"`
	// UpLatency is added after each read from the client (listener only).
	UpLatency Duration `json:"upLatency,omitempty"`
	// Bandwidth limits bytes per second to the client; UpBandwidth from
	// the client (listener only).
	Bandwidth   int64 `json:"bandwidth,omitempty"`
	UpBandwidth int64 `json:"upBandwidth,omitempty"`
	// SliceBytes splits every write into pieces of at most this many
	// bytes, SliceDelay apart.
	SliceBytes int      `json:"sliceBytes,omitempty"`
	SliceDelay Duration `json:"sliceDelay,omitempty"`
	// SlowClose delays closing a connection (listener only).
	SlowClose Duration `json:"slowClose,omitempty"`
	// ByteCap closes a connection (FIN) once this many bytes were sent on
	// it (listener only).
	ByteCap int64 `json:"byteCap,omitempty"`
	// Seed picks the jitter.
	Seed uint64 `json:"seed,omitempty"`
}

// IsZero reports whether s shapes nothing.
func (s *Shaping) IsZero() bool { return s == nil || *s == Shaping{Seed: s.Seed} }

// Check validates s; onRule rejects the listener-only fields.
func (s *Shaping) Check(c *fielderr.List, field string, onRule bool) {
	for _, d := range []struct {
		name string
		v    Duration
	}{{"latency", s.Latency}, {"jitter", s.Jitter}, {"upLatency", s.UpLatency}, {"sliceDelay", s.SliceDelay}, {"slowClose", s.SlowClose}} {
		if d.v < 0 {
			c.Add(field+"."+d.name, "must not be negative")
		}
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"bandwidth", s.Bandwidth}, {"upBandwidth", s.UpBandwidth}, {"sliceBytes", int64(s.SliceBytes)}, {"byteCap", s.ByteCap}} {
		if n.v < 0 {
			c.Add(field+"."+n.name, "must be >= 0 (0 = no limit), got %d", n.v)
		}
	}
	if s.SliceDelay > 0 && s.SliceBytes == 0 {
		c.Add(field+".sliceDelay", "needs sliceBytes (the size of the pieces)")
	}
	if onRule {
		for _, f := range []struct {
			name string
			set  bool
		}{{"upLatency", s.UpLatency != 0}, {"upBandwidth", s.UpBandwidth != 0}, {"slowClose", s.SlowClose != 0}, {"byteCap", s.ByteCap != 0}} {
			if f.set {
				c.Add(field+"."+f.name, "applies to a listener's connections only (set it with the listener's shaping)")
			}
		}
	}
}

// String is a short description ("bandwidth=102400B/s latency=50ms").
func (s Shaping) String() string {
	var parts []string
	add := func(name string, set bool, v any) {
		if set {
			parts = append(parts, fmt.Sprintf("%s=%v", name, v))
		}
	}
	add("latency", s.Latency != 0, s.Latency.D())
	add("jitter", s.Jitter != 0, s.Jitter.D())
	add("upLatency", s.UpLatency != 0, s.UpLatency.D())
	add("bandwidth", s.Bandwidth != 0, strconv.FormatInt(s.Bandwidth, 10)+"B/s")
	add("upBandwidth", s.UpBandwidth != 0, strconv.FormatInt(s.UpBandwidth, 10)+"B/s")
	add("sliceBytes", s.SliceBytes != 0, s.SliceBytes)
	add("sliceDelay", s.SliceDelay != 0, s.SliceDelay.D())
	add("slowClose", s.SlowClose != 0, s.SlowClose.D())
	add("byteCap", s.ByteCap != 0, s.ByteCap)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// parseShaping reads the path form "bandwidth:102400,latency:50ms,...".
func parseShaping(v string) (*Shaping, error) {
	s := &Shaping{}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(kv, ":")
		if !ok {
			return nil, fmt.Errorf("want KEY:VALUE pairs (bandwidth:102400,latency:50ms), got %q", kv)
		}
		var err error
		switch k {
		case "latency":
			s.Latency, err = duration(val)
		case "jitter":
			s.Jitter, err = duration(val)
		case "bandwidth":
			s.Bandwidth, err = strconv.ParseInt(val, 10, 64)
		case "sliceBytes":
			s.SliceBytes, err = atoi(val)
		case "sliceDelay":
			s.SliceDelay, err = duration(val)
		case "seed":
			s.Seed, err = strconv.ParseUint(val, 10, 64)
		default:
			return nil, fmt.Errorf("unknown shaping key %q (want latency, jitter, bandwidth, sliceBytes, sliceDelay, seed)", k)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
	}
	return s, nil
}
