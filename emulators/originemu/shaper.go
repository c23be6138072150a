package originemu

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/rules"
)

// errCut stops the body writer (http.ServeContent or a copy) once the
// rule's cut happened.
var errCut = errors.New("originemu: body cut by rule")

// corruptValues are the malformed values sent for "corrupt".
var corruptValues = map[string]string{
	"Etag":           "corrupt-etag-without-quotes",
	"Last-Modified":  "not-a-date",
	"Date":           "not-a-date",
	"Content-Length": "corrupt",
	"Content-Range":  "bytes corrupt",
}

// shaper is the http.ResponseWriter the response is written to: it applies
// the rule's headers, omissions and corruptions when headers go out, paces
// the body (drip) and cuts it after the configured number of bytes.
type shaper struct {
	x   *exchange
	a   *rules.Action
	end *rules.Directive // the abnormal end, if any
	cut *rules.Cut       // where it happens (AfterBytes set)

	wroteHeader bool
	written     int64
	dripped     bool
	done        bool   // cut happened or writing failed
	pace        *pacer // the rule's shape, if any
}

func (s *shaper) Header() http.Header { return s.x.w.Header() }

func (s *shaper) WriteHeader(code int) {
	if s.wroteHeader {
		return
	}
	s.wroteHeader = true
	h := s.x.w.Header()
	for k, v := range s.a.Headers {
		h.Set(k, v)
	}
	for _, name := range s.a.Omit {
		h.Del(rules.CanonicalFaultHeader(name))
	}
	for _, name := range s.a.Corrupt {
		key := rules.CanonicalFaultHeader(name)
		h.Set(key, corruptValues[key])
	}
	s.x.status = code
	s.x.w.WriteHeader(code)
}

func (s *shaper) Write(p []byte) (int, error) {
	if !s.wroteHeader {
		s.WriteHeader(http.StatusOK)
	}
	total := 0
	for len(p) > 0 {
		if s.done {
			return total, errCut
		}
		chunk := p
		if s.cut != nil {
			room := *s.cut.AfterBytes - s.written
			if room <= 0 {
				s.doCut()
				return total, errCut
			}
			chunk = chunk[:min(int64(len(chunk)), room)]
		}
		if d := s.a.Drip; d != nil {
			chunk = chunk[:min(len(chunk), d.Bytes)]
			if s.dripped && !s.x.sleep(d.Every.D()) {
				s.fail(s.x.ctx.Err())
				return total, s.x.ctx.Err()
			}
			s.dripped = true
		}
		n, err := s.send(chunk)
		s.written += int64(n)
		total += n
		if err == nil && s.a.Drip != nil {
			err = s.x.w.Flush()
		}
		if err != nil {
			s.fail(err)
			return total, err
		}
		p = p[n:]
	}
	return total, nil
}

// send writes body bytes, through the rule's shape if it has one (each
// piece flushed, so the pacing reaches the wire).
func (s *shaper) send(b []byte) (int, error) {
	if s.a.Shape.IsZero() {
		return s.x.w.Write(b)
	}
	if s.pace == nil {
		s.pace = newPacer(*s.a.Shape, s.a.Shape.Bandwidth)
	}
	return s.pace.write(b, func(p []byte) (int, error) {
		n, err := s.x.w.Write(p)
		if err == nil {
			err = s.x.w.Flush()
		}
		return n, err
	}, s.x.sleep)
}

func (s *shaper) fail(err error) {
	s.done = true
	if s.x.end == "" {
		s.x.end = s.x.endFor(err)
	}
}

func (s *shaper) doCut() {
	s.done = true
	s.x.cut(s.end, s.cut)
}

// finish ends the response: a cut that the body never reached happens now
// (after the whole, shorter body), else the response is flushed complete.
func (s *shaper) finish() {
	if !s.wroteHeader {
		s.WriteHeader(http.StatusOK)
	}
	switch {
	case s.done:
	case s.cut != nil:
		if s.written < *s.cut.AfterBytes {
			s.x.notef("the body ended after %d bytes, before the cut point", s.written)
		}
		s.doCut()
	default:
		s.x.finishPlain(s.x.w.Flush())
	}
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }
