package receive

import (
	"bytes"
	"strconv"
	"strings"
)

// h1 scanner states.
const (
	sHead      = iota // gathering a request head
	sBody             // Content-Length body bytes
	sChunkLine        // a chunk-size line
	sChunkData        // chunk data
	sChunkEnd         // the CRLF after chunk data
	sTrailer          // the trailer section after the last chunk
	sPass             // framing not tracked any more: bytes pass as they are
	sReject           // a head was rejected: the client's bytes are dropped
)

// maxChunkLine bounds a chunk-size line (with extensions) and the CRLF
// after chunk data: past it the framing is not followed (net/http rejects
// the body itself).
const maxChunkLine = 4 << 10

// rejectHead is the head handed to net/http in place of a refused one,
// with the connection's token in RejectHeader: the refusal waits on the
// connection, where the handler that gets this placeholder finds it, so
// the answer goes out in order on the connection and the refused bytes
// never reach net/http. Its method is one no route allows, in case a
// handler that knows nothing of it gets it.
func rejectHead(token string) string {
	return "EDGECONFORM-REFUSED /refused HTTP/1.1\r\nHost: refused.invalid\r\n" + RejectHeader + ": " + token + "\r\nConnection: close\r\n\r\n"
}

// RejectHeader carries a connection's token on the placeholder request
// of a refused head; a client's own is refused (400).
const RejectHeader = "Edgeconform-Refused"

// h1scan follows HTTP/1.1 request framing on a connection's incoming bytes
// (RFC 9112): it holds each request head back until it is complete,
// checks it, and then releases it or a rejectHead; body bytes are
// released as they come, counted (Content-Length) or parsed (chunked) to
// find the next head. It buffers at most one head, bounded by the limits.
type h1scan struct {
	token  string // for rejectHead
	lim    Limits
	state  int
	head   []byte
	line   int // start of the current line in head
	reqEnd int // end of the request line in head; -1 before it
	fields int
	first  bool // no request yet (an h2c preface is possible)
	cl     []string
	te     []string
	http10 bool
	remain int64  // sBody, sChunkData
	buf    []byte // sChunkLine, sChunkEnd, sTrailer: the line so far
	trail  int    // sTrailer: bytes so far
}

func newH1(l Limits, token string) *h1scan {
	return &h1scan{lim: l, reqEnd: -1, first: true, token: token}
}

// feed scans in and appends the bytes to release to out. It returns a
// rejection when a head was refused (out then ends with rejectHead), and
// h2 when the connection turned out to be h2c with prior knowledge (out
// then holds the bytes so far; the rest is h2's).
func (s *h1scan) feed(in, out []byte) (_ []byte, rej *Error, h2 bool, rest []byte) {
	for len(in) > 0 {
		switch s.state {
		case sPass:
			return append(out, in...), nil, false, nil
		case sReject:
			return out, nil, false, nil
		case sBody:
			n := min(int64(len(in)), s.remain)
			out, in = append(out, in[:n]...), in[n:]
			if s.remain -= n; s.remain == 0 {
				s.state = sHead
			}
		case sChunkData:
			n := min(int64(len(in)), s.remain)
			out, in = append(out, in[:n]...), in[n:]
			if s.remain -= n; s.remain == 0 {
				s.state, s.buf = sChunkEnd, s.buf[:0]
			}
		case sChunkLine, sChunkEnd, sTrailer:
			i := bytes.IndexByte(in, '\n')
			take := len(in)
			if i >= 0 {
				take = i + 1
			}
			out = append(out, in[:take]...)
			s.buf, in = append(s.buf, in[:take]...), in[take:]
			if i < 0 {
				if len(s.buf) > maxChunkLine {
					s.state = sPass
				}
				continue
			}
			s.endBodyLine()
		case sHead:
			i := bytes.IndexByte(in, '\n')
			take := len(in)
			if i >= 0 {
				take = i + 1
			}
			s.head, in = append(s.head, in[:take]...), in[take:]
			if i < 0 {
				if e := s.tooLong(); e != nil {
					return s.refuse(out, e), e, false, nil
				}
				continue
			}
			done, e := s.endHeadLine()
			if e != nil {
				return s.refuse(out, e), e, false, nil
			}
			if !done {
				continue
			}
			if s.first && strings.HasPrefix(string(s.head), "PRI * HTTP/2.0\r\n") {
				return append(out, s.head...), nil, true, in
			}
			out = append(out, s.head...)
			s.nextHead()
		}
	}
	return out, nil, false, nil
}

// tooLong checks the line being gathered against the limits.
func (s *h1scan) tooLong() *Error {
	if s.reqEnd < 0 {
		return s.lim.LineTooLong(len(s.head) - s.line)
	}
	return s.lim.FieldsTooLarge(0, len(s.head)-s.reqEnd)
}

// endHeadLine handles the head line just ended; done at the empty line.
func (s *h1scan) endHeadLine() (done bool, _ *Error) {
	line := strings.TrimSuffix(strings.TrimSuffix(string(s.head[s.line:]), "\n"), "\r")
	s.line = len(s.head)
	if s.reqEnd < 0 {
		if line == "" { // empty lines before the request line: net/http's to judge
			return false, nil
		}
		s.reqEnd = len(s.head)
		sp1, sp2 := strings.IndexByte(line, ' '), strings.LastIndexByte(line, ' ')
		if sp1 >= 0 && sp2 > sp1 {
			if e := s.lim.TargetTooLong(sp2 - sp1 - 1); e != nil {
				return false, e
			}
			s.http10 = line[sp2+1:] == "HTTP/1.0"
		}
		return false, nil
	}
	if e := s.tooLong(); e != nil {
		return false, e
	}
	if line == "" {
		return true, s.framing()
	}
	if line[0] == ' ' || line[0] == '\t' { // RFC 9112 5.2
		return false, ObsFold()
	}
	if s.fields++; s.fields > s.lim.MaxHeaderFields {
		return false, s.lim.FieldsTooLarge(s.fields, 0)
	}
	name, value, _ := strings.Cut(line, ":")
	switch {
	case strings.EqualFold(name, "Content-Length"):
		s.cl = append(s.cl, strings.TrimSpace(value))
	case strings.EqualFold(name, "Transfer-Encoding"):
		s.te = append(s.te, strings.TrimSpace(value))
	}
	return false, nil
}

// framing checks the complete head's message framing (RFC 9112 6.1, 6.3)
// and sets the state for its body.
func (s *h1scan) framing() *Error {
	if e := Framing(len(s.cl), len(s.te), s.http10); e != nil { // RFC 9112 6.1: reject, and close
		return e
	}
	switch {
	case len(s.te) == 1 && strings.EqualFold(s.te[0], "chunked"):
		s.state, s.buf = sChunkLine, s.buf[:0]
	case len(s.te) > 0: // net/http answers 501 and closes
		s.state = sPass
	case len(s.cl) > 0:
		n, err := strconv.ParseInt(s.cl[0], 10, 64)
		for _, v := range s.cl[1:] {
			if v != s.cl[0] {
				err = strconv.ErrSyntax
			}
		}
		switch {
		case err != nil || n < 0: // net/http answers 400
			s.state = sPass
		case n > 0:
			s.state, s.remain = sBody, n
		}
	}
	return nil
}

// endBodyLine handles a chunk-size line, a chunk's CRLF or a trailer line.
func (s *h1scan) endBodyLine() {
	line := strings.TrimSuffix(strings.TrimSuffix(string(s.buf), "\n"), "\r")
	s.buf = s.buf[:0]
	switch s.state {
	case sChunkEnd:
		if line != "" {
			s.state = sPass
			return
		}
		s.state = sChunkLine
	case sChunkLine:
		size, _, _ := strings.Cut(line, ";")
		n, err := strconv.ParseInt(strings.TrimRight(size, " \t"), 16, 64)
		switch {
		case err != nil || n < 0 || size == "" || strings.ContainsAny(size[:1], "+-"):
			s.state = sPass // net/http rejects the body: the handler answers 400
		case n == 0:
			s.state, s.trail = sTrailer, 0
		default:
			s.state, s.remain = sChunkData, n
		}
	case sTrailer:
		if s.trail += len(line) + 2; s.trail > s.lim.MaxHeaderBytes {
			s.state = sPass
			return
		}
		if line == "" {
			s.state = sHead
		}
	}
}

// nextHead resets the head state once a head is released.
func (s *h1scan) nextHead() {
	s.head, s.line, s.reqEnd, s.fields = s.head[:0], 0, -1, 0
	s.cl, s.te, s.http10, s.first = s.cl[:0], s.te[:0], false, false
	if s.state == sHead && len(s.head) == 0 && cap(s.head) > 8<<10 {
		s.head = nil // do not keep a large head's buffer for the connection's life
	}
}

// refuse drops the head and hands net/http rejectHead instead.
func (s *h1scan) refuse(out []byte, _ *Error) []byte {
	s.state, s.head = sReject, nil
	return append(out, rejectHead(s.token)...)
}
