package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/reference/config"
)

// Errors a chosen response's Body.Read returns when a timeout cuts it short
// (TMO-5, TMO-6); so an open-ended range passed to the origin stays open
// until the origin ends it or one of them passes (RNG-4). The upstream request is cancelled when they happen.
var (
	// ErrReadTimeout: no body data from the origin for readTimeout.
	ErrReadTimeout = errors.New("origin readTimeout passed")
	// ErrResponseTimeout: the body took longer than responseTimeout,
	// counted from its first byte.
	ErrResponseTimeout = errors.New("origin responseTimeout passed")
)

// Truncated reports whether err, from a chosen response's Body.Read, means
// the body ended short of what the origin declared or meant to send: a
// timeout (ErrReadTimeout, ErrResponseTimeout), an upstream failure (reset,
// stream error, io.ErrUnexpectedEOF) or a cancellation. The server must then
// cut the client's response short rather than end it cleanly, and must not
// cache it (TMO-6). Body.Read returns exactly io.EOF only at a proper end.
func Truncated(err error) bool { return err != nil && err != io.EOF }

// choose wraps a usable response for the caller (TMO-3, TMO-5, TMO-6,
// PRT-5): its body reads under o's readTimeout and responseTimeout, cancel
// cancels the attempt when the body is done, and origin trailers are dropped.
func (f *fetch) choose(o config.EffectiveOrigin, resp *http.Response, cancel context.CancelCauseFunc) *http.Response {
	expect := resp.ContentLength
	if f.req.Method == http.MethodHead || resp.StatusCode < 200 ||
		resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
		expect = -1
	}
	readTimeout := min(o.ReadTimeout, o.ResponseTimeout) // TMO-5: capped by responseTimeout
	b := &body{
		rc: resp.Body, cancel: cancel, expect: expect,
		readTimeout: readTimeout, responseTimeout: o.ResponseTimeout,
		log: f.e.log, requestID: f.req.RequestID, origin: o.Name,
	}
	b.ready, _ = resp.Body.(readier)
	b.view, _ = resp.Body.(viewer)
	if resp.Body == http.NoBody {
		b.ready = noBody{}
	}
	// The gap timer runs from the headers until the first body byte,
	// unless that byte is here already.
	if !b.isReady() {
		b.armGapLocked()
	}

	out := *resp // the transport fills resp.Trailer at the end; the copy keeps none
	out.Body = b
	out.Trailer = nil
	out.Header.Del("Trailer")
	return &out
}

// readier is an upstream body that can tell its next Read will not wait
// for the origin (upstream's HTTP/1.1 bodies).
type readier interface{ Ready() bool }

// noBody is http.NoBody's readiness: its Read never waits.
type noBody struct{}

func (noBody) Ready() bool { return true }

// body enforces readTimeout and responseTimeout on an origin response body.
// Its timers run only while the origin is waited for: none is armed for a
// Read its upstream body says is ready, and none for responseTimeout once
// the whole declared body is in (issue #14: a 1 KiB response, read with its
// head, took three timers).
type body struct {
	rc              io.ReadCloser
	ready           readier // rc, if it can tell
	view            viewer  // rc, if it can hand out views
	cancel          context.CancelCauseFunc
	expect          int64 // declared length, -1 if none applies
	readTimeout     time.Duration
	responseTimeout time.Duration
	log             *slog.Logger
	requestID       string // for the log, with origin (not a log.With per response: issue #14)
	origin          string

	mu       sync.Mutex
	n        int64
	gap      *time.Timer // readTimeout: armed while waiting for the origin
	gapArmed bool
	total    *time.Timer // responseTimeout: from the first byte
	timeout  error       // set when a timer fired
	done     bool        // ended (EOF, error, timeout) or closed
	err      error       // the error Read keeps returning once done
}

func (b *body) Read(p []byte) (int, error) {
	n, _, err := b.read(p, 0, false)
	return n, err
}

// viewer is an upstream body that can hand out its bytes without a copy
// (upstream's HTTP/1.1 bodies of a known length or up to the close).
type viewer interface {
	Viewable() bool
	Next(max int) ([]byte, error)
}

// Viewable reports whether Next can serve this body.
func (b *body) Viewable() bool { return b.view != nil && b.view.Viewable() }

// Next is Read without the copy, under the same timeouts: up to max bytes
// as a view of the upstream connection's buffer, valid until the next
// Read, Next or Close (upstream's h1Body.Next). Only when Viewable.
func (b *body) Next(max int) ([]byte, error) {
	_, v, err := b.read(nil, max, true)
	return v, err
}

// read is Read into p, or (viewing) Next of up to max bytes.
func (b *body) read(p []byte, max int, viewing bool) (int, []byte, error) {
	b.mu.Lock()
	if b.timeout != nil && !b.done {
		b.endLocked(b.timeout)
	}
	if b.done {
		err := b.err
		b.mu.Unlock()
		return 0, nil, err
	}
	if !b.gapArmed && !b.isReady() {
		b.armGapLocked()
	}
	b.mu.Unlock()

	var (
		n    int
		view []byte
		err  error
	)
	if viewing {
		view, err = b.view.Next(max)
		n = len(view)
	} else {
		n, err = b.rc.Read(p)
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(n)
	if n > 0 {
		if b.gapArmed {
			b.gap.Stop()
			b.gapArmed = false
		}
		if b.total == nil && !b.completeLocked(err) {
			// More to come: responseTimeout runs from this first byte.
			d := b.responseTimeout
			b.total = time.AfterFunc(d, func() { b.fire(ErrResponseTimeout, d) })
		}
	}
	switch {
	case b.timeout != nil && (err != nil || n == 0):
		// A timer cut the body; report it rather than what the cut
		// looked like from below.
		err = b.timeout
	case b.timeout != nil:
		// Data that arrived before the cut; the next Read reports it.
		return n, view, nil
	case err == io.EOF && b.expect >= 0 && b.n < b.expect:
		err = fmt.Errorf("origin body ended after %d of %d bytes: %w", b.n, b.expect, io.ErrUnexpectedEOF)
		b.logTruncated("", err)
	case err != nil && err != io.EOF:
		b.logTruncated("", err)
	}
	if err != nil {
		b.endLocked(err)
	}
	return n, view, err
}

// fire is a timer going off: cut the body and cancel the upstream request.
func (b *body) fire(which error, d time.Duration) {
	b.mu.Lock()
	if b.done || b.timeout != nil {
		b.mu.Unlock()
		return
	}
	b.timeout = fmt.Errorf("%w (%v) after %d body bytes", which, d, b.n)
	name := "read_timeout"
	if which == ErrResponseTimeout {
		name = "response_timeout"
	}
	b.logTruncated(name, b.timeout)
	b.mu.Unlock()
	b.cancel(which)
}

func (b *body) logTruncated(timeout string, err error) {
	b.log.Warn("origin response truncated", "request_id", b.requestID, "origin", b.origin,
		"timeout", timeout, "bytes", b.n, "expected", b.expect, "err", err.Error())
}

// isReady reports whether the next Read of rc returns without waiting
// for the origin.
func (b *body) isReady() bool { return b.ready != nil && b.ready.Ready() }

// completeLocked reports whether rc has nothing left to wait for after a
// Read that returned err: it ended, or all the declared bytes are in and
// rc is one that tells when it is ready (an HTTP/1.1 body then ends
// without another read; an h2 one may still wait for the stream's end).
func (b *body) completeLocked(err error) bool {
	return err != nil || (b.ready != nil && b.expect >= 0 && b.n >= b.expect)
}

// armGapLocked starts readTimeout for a Read that may wait.
func (b *body) armGapLocked() {
	if b.gap == nil {
		d := b.readTimeout
		b.gap = time.AfterFunc(d, func() { b.fire(ErrReadTimeout, d) })
	} else {
		b.gap.Reset(b.readTimeout)
	}
	b.gapArmed = true
}

func (b *body) endLocked(err error) {
	b.done, b.err = true, err
	if b.gap != nil {
		b.gap.Stop()
	}
	if b.total != nil {
		b.total.Stop()
	}
}

// Close releases the origin response; the attempt's context is cancelled.
func (b *body) Close() error {
	b.mu.Lock()
	if !b.done {
		b.endLocked(errors.New("fetch: read on closed body"))
	}
	b.mu.Unlock()
	err := b.rc.Close()
	b.cancel(errBodyClosed)
	return err
}

var errBodyClosed = errors.New("fetch: origin body closed")
