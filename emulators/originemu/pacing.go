package originemu

import (
	"errors"
	"time"

	"github.com/edgeconform/edgeconform/emulators/rules"
)

// errCancelled ends a shaped write whose stream went away while it waited.
var errCancelled = errors.New("originemu: shaped write cancelled")

// idleCredit is how far behind its schedule a paced stream may fall (timer
// lateness) and still catch up; a longer pause earns nothing.
const idleCredit = 100 * time.Millisecond

// pacer applies a rules.Shaping to one direction of a stream of writes:
// latency (with jitter) before each write, slices with delays between
// them, and a bandwidth limit. Idle time earns no credit: after a pause the
// rate applies from the next byte.
type pacer struct {
	cfg   rules.Shaping
	bw    int64 // bytes/s, 0 = none
	start time.Time
	sent  int64
	draws int64 // jitter draws so far
}

func newPacer(cfg rules.Shaping, bandwidth int64) *pacer {
	return &pacer{cfg: cfg, bw: bandwidth}
}

// write sends b through w as the shaping says; wait sleeps for d and
// reports false when the stream is cancelled.
func (p *pacer) write(b []byte, w func([]byte) (int, error), wait func(time.Duration) bool) (int, error) {
	if d := p.latency(); d > 0 && !wait(d) {
		return 0, errCancelled
	}
	total := 0
	for len(b) > 0 {
		piece := len(b)
		if p.cfg.SliceBytes > 0 {
			piece = min(piece, p.cfg.SliceBytes)
		}
		if p.bw > 0 {
			piece = min(piece, int(max(1, p.bw/50))) // 20 ms worth at a time
			if d := p.due(int64(piece)); d > 0 && !wait(d) {
				return total, errCancelled
			}
		}
		n, err := w(b[:piece])
		total += n
		p.sent += int64(n)
		if err != nil {
			return total, err
		}
		b = b[piece:]
		if len(b) > 0 && p.cfg.SliceDelay > 0 && !wait(p.cfg.SliceDelay.D()) {
			return total, errCancelled
		}
	}
	return total, nil
}

// due is how long to wait before n more bytes keep within the bandwidth.
func (p *pacer) due(n int64) time.Duration {
	now := time.Now()
	if p.start.IsZero() {
		p.start = now
	}
	at := func(bytes int64) time.Time {
		return p.start.Add(time.Duration(float64(bytes) / float64(p.bw) * float64(time.Second)))
	}
	// No credit for idle time (a pause between responses), but timer
	// lateness of a few milliseconds is made up by the next pieces.
	if behind := now.Sub(at(p.sent)); behind > idleCredit {
		p.start = p.start.Add(behind)
	}
	return time.Until(at(p.sent + n))
}

// latency is the delay before the next write: Latency plus a jitter draw.
func (p *pacer) latency() time.Duration {
	d := p.cfg.Latency.D()
	if j := p.cfg.Jitter.D(); j > 0 {
		p.draws++
		d += time.Duration(float64(j) * rules.Unit(p.cfg.Seed, p.draws))
	}
	return d
}

// read accounts for n bytes just read: the latency, then the bandwidth.
func (p *pacer) read(n int, wait func(time.Duration) bool) bool {
	if d := p.latency(); d > 0 && !wait(d) {
		return false
	}
	if p.bw > 0 {
		if d := p.due(int64(n)); d > 0 && !wait(d) {
			return false
		}
		p.sent += int64(n)
	}
	return true
}
