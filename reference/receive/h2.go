package receive

import (
	"encoding/binary"
	"time"
)

// h2 frame types and flags this package reads (RFC 9113 6).
const (
	frameData      = 0x0
	frameHeaders   = 0x1
	frameRSTStream = 0x3
	frameGoAway    = 0x7
	flagEndStream  = 0x1

	errCodeEnhanceYourCalm = 0xb
	// maxTracked bounds the streams remembered as having a body open.
	maxTracked = 4096
)

// h2in follows the client's frames on an h2c connection (after the
// preface) without decoding header blocks: it counts RST_STREAM frames
// against the reset limit and marks trailers. A frame header is held back
// until all of its 9 bytes are in, so its flags can still be changed.
type h2in struct {
	lim       Limits
	skip      int // preface bytes still to pass ("SM\r\n\r\n")
	hdr       [9]byte
	hn        int
	remain    uint32
	maxStream uint32
	resets    int
	window    time.Time
	bodies    map[uint32]bool // streams with HEADERS and a body still to come
	now       func() time.Time
}

func newH2in(l Limits, skip int) *h2in {
	return &h2in{lim: l, skip: skip, bodies: map[uint32]bool{}, now: time.Now}
}

// feed scans in and appends what to release to out; calm is set when the
// reset limit was passed, and then out ends before that RST_STREAM frame.
func (f *h2in) feed(in, out []byte) (_ []byte, calm bool) {
	for len(in) > 0 {
		if f.skip > 0 {
			n := min(f.skip, len(in))
			out, in, f.skip = append(out, in[:n]...), in[n:], f.skip-n
			continue
		}
		if f.remain > 0 {
			n := min(int(f.remain), len(in))
			out, in = append(out, in[:n]...), in[n:]
			f.remain -= uint32(n)
			continue
		}
		n := copy(f.hdr[f.hn:], in)
		f.hn, in = f.hn+n, in[n:]
		if f.hn < len(f.hdr) {
			continue
		}
		f.hn = 0
		if f.frame() {
			return out, true
		}
		out = append(out, f.hdr[:]...)
		f.remain = uint32(f.hdr[0])<<16 | uint32(f.hdr[1])<<8 | uint32(f.hdr[2])
	}
	return out, false
}

// frame looks at a complete frame header; true means the reset limit was
// passed.
func (f *h2in) frame() (calm bool) {
	typ, flags := f.hdr[3], f.hdr[4]
	stream := binary.BigEndian.Uint32(f.hdr[5:9]) & (1<<31 - 1)
	switch typ {
	case frameHeaders:
		if f.bodies[stream] {
			// Trailers (MTH-2: a request with trailers is refused).
			// net/http drops trailers the request did not declare; with
			// END_STREAM cleared it resets the stream with PROTOCOL_ERROR
			// instead (RFC 9113 8.1: trailers must end the stream), so the
			// body ends in an error and nothing is forwarded complete.
			f.hdr[4] = flags &^ flagEndStream
			delete(f.bodies, stream)
			return false
		}
		f.maxStream = max(f.maxStream, stream)
		if flags&flagEndStream == 0 && len(f.bodies) < maxTracked {
			f.bodies[stream] = true
		}
	case frameData:
		if flags&flagEndStream != 0 {
			delete(f.bodies, stream)
		}
	case frameRSTStream:
		delete(f.bodies, stream)
		if f.lim.H2MaxResets <= 0 {
			return false
		}
		now := f.now()
		if now.Sub(f.window) >= f.lim.H2ResetWindow {
			f.window, f.resets = now, 0
		}
		f.resets++
		return f.resets > f.lim.H2MaxResets
	}
	return false
}

// goAway is a GOAWAY frame: last stream, ENHANCE_YOUR_CALM.
func goAway(lastStream uint32) []byte {
	b := make([]byte, 9+8)
	b[2] = 8
	b[3] = frameGoAway
	binary.BigEndian.PutUint32(b[9:], lastStream&(1<<31-1))
	binary.BigEndian.PutUint32(b[13:], errCodeEnhanceYourCalm)
	return b
}

// h2out follows the server's frames so that a GOAWAY can be slipped in
// between two of them.
type h2out struct {
	hn     int
	hdr    [3]byte
	remain int // payload bytes left, plus the header bytes after the length
}

// between reports whether the output is between two frames.
func (o *h2out) between() bool { return o.hn == 0 && o.remain == 0 }

// boundary is how many bytes of p end the frame in progress: 0 when the
// output is between frames, len(p) when p does not finish the frame.
func (o *h2out) boundary(p []byte) int {
	c := *o
	for i := 0; ; {
		if c.between() || i == len(p) {
			return i
		}
		i += c.step(p[i:])
	}
}

// advance follows p.
func (o *h2out) advance(p []byte) {
	for len(p) > 0 {
		p = p[o.step(p):]
	}
}

// step consumes bytes of p within one frame part (header or payload).
func (o *h2out) step(p []byte) int {
	if o.remain > 0 {
		n := min(o.remain, len(p))
		o.remain -= n
		return n
	}
	n := copy(o.hdr[o.hn:], p)
	o.hn += n
	if o.hn == len(o.hdr) {
		o.hn = 0
		o.remain = int(o.hdr[0])<<16 | int(o.hdr[1])<<8 | int(o.hdr[2]) + 6 // type, flags, stream id
	}
	return n
}
