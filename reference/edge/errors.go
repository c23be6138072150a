package edge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/session"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/outcome"
)

// Responses the edge makes itself (issue #12 item 7, issue #13 item 3).
// Until a response's header is sent, a failure is answered with a status
// and a reason, never a bare close or stream reset: 502 when no usable
// origin response came (ATT-8, COL-7), 504 when maxAttemptsTimeout passed
// (ATT-9), 503 when the node's fills in flight are at their bound. Leader
// and followers of a fill get the same answer (COL-7). Every such answer
// is written by synthesize.

// synthesize answers v with status and reason (an RFC 9209 error type,
// written as the body "STATUS TEXT: reason"), Cache-Status when v went
// through the cache, Retry-After on a 503, and the log fields: status,
// proxy_status (reason) and error (detail, when not empty). It replaces
// every header prepared for another answer.
func (s *Server) synthesize(v *visit, status int, reason outcome.Reason, detail string) {
	res := fetch.Result{}
	if v.result != nil {
		res = *v.result // keep the origin and attempts for the log
	}
	res.Response, res.Status, res.Reason = nil, status, reason
	v.result, v.status = &res, status
	if detail != "" {
		v.errText = detail
	}
	h := v.w.Header()
	clear(h)
	if v.cacheHdr != "" {
		h.Set("Cache-Status", v.cacheHdr)
	}
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	v.w.WriteHeader(status)
	fmt.Fprintf(v.w, "%d %s: %s\n", status, http.StatusText(status), reason)
}

// failBeforeHead answers v, which has sent nothing yet, for a fill or body
// that failed with err: nothing if the client has gone, else the fill's
// own status and reason (session.FillError), 503 past the fill bound, 504 for a
// timeout and 502 otherwise. what names what was being done, for the log.
func (s *Server) failBeforeHead(v *visit, what string, err error) {
	if v.r.Context().Err() != nil {
		v.errText = "client gone: " + err.Error()
		return
	}
	detail := what + ": " + err.Error()
	var fe *session.FillError
	switch {
	case errors.As(err, &fe):
		s.synthesize(v, fe.Status, fe.Reason, detail)
	case errors.Is(err, collapse.ErrTooManyFills):
		s.log.Warn("cache miss refused: fills in flight at their bound", "request_id", v.id, "key", v.cacheKey,
			"in_flight", s.group.Stats().InFlight)
		s.synthesize(v, http.StatusServiceUnavailable, outcome.ConnectionLimitReached, detail)
	case errors.Is(err, fetch.ErrReadTimeout):
		s.synthesize(v, http.StatusGatewayTimeout, outcome.ConnectionReadTimeout, detail)
	case errors.Is(err, fetch.ErrResponseTimeout), errors.Is(err, context.DeadlineExceeded):
		s.synthesize(v, http.StatusGatewayTimeout, outcome.HTTPResponseTimeout, detail)
	case errors.Is(err, collapse.ErrTruncated), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, session.ErrValidatorChanged):
		s.synthesize(v, http.StatusBadGateway, outcome.HTTPResponseIncomplete, detail)
	default:
		s.synthesize(v, http.StatusBadGateway, outcome.ProxyInternalError, detail)
	}
}

// sendAfterFirstByte sends body to the client after the header writeHead
// writes, but only once body has produced its first byte (or ended
// cleanly): a body that fails before its first byte is answered by
// failBeforeHead, since nothing was sent yet (issue #12 item 7: net/http
// sends a header only with the first body bytes, so a handler that aborts
// before them leaves the client a bare close or stream reset). A body
// failing later is truncated visibly (TMO-6, COL-7).
func (s *Server) sendAfterFirstByte(v *visit, body io.Reader, writeHead func()) {
	src := s.sourceOf(body)
	defer src.done()
	var p []byte
	var err error
	for range 100 { // io.Reader may return (0, nil); a few retries, never spin
		if p, err = src.next(); len(p) > 0 || err != nil {
			break
		}
	}
	if len(p) == 0 && err != nil && err != io.EOF {
		s.failBeforeHead(v, "reading the response body", err)
		return
	}
	writeHead()
	// The first bytes go out as they were taken, and the rest follows the
	// same way (issue #14: a second buffer and a copy of the first read,
	// up to 64 KiB, per response before).
	s.streamBody(v, &src, p, err)
}
