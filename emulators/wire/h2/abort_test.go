package h2

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

func errorsAs(err error, target any) bool { return err != nil && errors.As(err, target) }

// isStreamErrorCode reports whether err is an x/net http2.StreamError with
// code.
func isStreamErrorCode(err error, code http2.ErrCode) bool {
	var se http2.StreamError
	return errorsAs(err, &se) && se.Code == code
}

// abortHandler writes n body bytes (n < 0: nothing, not even the header),
// flushes, aborts with kind and code, and reports what Write and Abort
// return afterwards on errs.
func abortHandler(n int, kind wire.AbortKind, code http2.ErrCode, errs chan<- error) wire.Handler {
	return handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		if r.URL.Path == "/ok" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		if n >= 0 {
			w.Header().Set("Content-Length", "100000")
			_, _ = w.Write(make([]byte, n))
			if err := w.Flush(); err != nil {
				errs <- fmt.Errorf("flush: %w", err)
				return
			}
		}
		if err := w.Abort(kind, uint32(code)); err != nil {
			errs <- fmt.Errorf("abort: %w", err)
			return
		}
		var problems []string
		if _, err := w.Write([]byte("x")); !errors.Is(err, wire.ErrAborted) {
			problems = append(problems, fmt.Sprintf("Write after Abort: %v", err))
		}
		if err := w.Flush(); !errors.Is(err, wire.ErrAborted) {
			problems = append(problems, fmt.Sprintf("Flush after Abort: %v", err))
		}
		if err := w.Abort(kind, uint32(code)); !errors.Is(err, wire.ErrAborted) {
			problems = append(problems, fmt.Sprintf("second Abort: %v", err))
		}
		if w.BodyBytes() != int64(max(n, 0)) {
			problems = append(problems, fmt.Sprintf("BodyBytes %d", w.BodyBytes()))
		}
		if problems != nil {
			errs <- errors.New(strings.Join(problems, "; "))
			return
		}
		errs <- nil
	})
}

func TestAbortRSTStream(t *testing.T) {
	codes := []http2.ErrCode{http2.ErrCodeCancel, http2.ErrCodeRefusedStream, http2.ErrCodeInternal, http2.ErrCodeEnhanceYourCalm}
	for _, code := range codes {
		for _, n := range []int{-1, 0, 70000} {
			t.Run(fmt.Sprintf("%v/after-%d", code, n), func(t *testing.T) {
				errs := make(chan error, 1)
				ts := newTLSServer(t, abortHandler(n, wire.AbortRSTStream, code, errs))
				cc := ts.clientConn(t)
				req, _ := http.NewRequest("GET", ts.url()+"/abort", nil)
				resp, err := cc.RoundTrip(req)
				if n < 0 {
					if !isStreamErrorCode(err, code) {
						t.Fatalf("RoundTrip error %v, want stream error %v", err, code)
					}
				} else {
					if err != nil {
						t.Fatalf("RoundTrip: %v", err)
					}
					b, err := io.ReadAll(resp.Body)
					if !isStreamErrorCode(err, code) {
						t.Errorf("body error %v, want stream error %v", err, code)
					}
					if len(b) != n {
						t.Errorf("got %d body bytes before the reset, want %d", len(b), n)
					}
				}
				if err := <-errs; err != nil {
					t.Error(err)
				}
				// The connection stays usable.
				req, _ = http.NewRequest("GET", ts.url()+"/ok", nil)
				resp, err = cc.RoundTrip(req)
				if err != nil {
					t.Fatalf("next request on the same connection: %v", err)
				}
				b, _ := io.ReadAll(resp.Body)
				if string(b) != "ok" {
					t.Errorf("next body %q", b)
				}
			})
		}
	}
}

func TestAbortRSTStreamNetHTTPClient(t *testing.T) {
	errs := make(chan error, 1)
	ts := newTLSServer(t, abortHandler(1000, wire.AbortRSTStream, http2.ErrCodeCancel, errs))
	resp, err := ts.client(t, netHTTPTLS).Get(ts.url() + "/abort")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || !strings.Contains(err.Error(), "CANCEL") {
		t.Errorf("body error %v, want a CANCEL stream error", err)
	}
	if err := <-errs; err != nil {
		t.Error(err)
	}
}

// The pooled x/net Transport retries a request refused before its response
// header; the handler sees it twice.
func TestRefusedStreamIsRetried(t *testing.T) {
	var calls atomic.Int32
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		if calls.Add(1) == 1 {
			_ = w.Abort(wire.AbortRSTStream, uint32(http2.ErrCodeRefusedStream))
			return
		}
		_, _ = io.WriteString(w, "second")
	}))
	resp, err := ts.client(t, xnetTLS).Get(ts.url())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "second" || calls.Load() != 2 {
		t.Errorf("body %q after %d calls", b, calls.Load())
	}
}

func TestAbortGoAway(t *testing.T) {
	for _, n := range []int{-1, 5000} {
		for _, code := range []http2.ErrCode{http2.ErrCodeInternal, http2.ErrCodeEnhanceYourCalm, http2.ErrCodeNo} {
			t.Run(fmt.Sprintf("%v/after-%d", code, n), func(t *testing.T) {
				errs := make(chan error, 1)
				ts := newTLSServer(t, abortHandler(n, wire.AbortGoAway, code, errs))
				client := ts.client(t, xnetTLS)
				resp, err := client.Get(ts.url() + "/abort")
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				var ga http2.GoAwayError
				if !errorsAs(err, &ga) || ga.ErrCode != code || ga.LastStreamID != 1 {
					t.Errorf("error %v, want GoAwayError %v last stream 1", err, code)
				}
				if err := <-errs; err != nil {
					t.Error(err)
				}
				resp, err = client.Get(ts.url() + "/ok")
				if err != nil {
					t.Fatalf("request after GOAWAY: %v", err)
				}
				resp.Body.Close()
				if got := ts.accepted.Load(); got != 2 {
					t.Errorf("%d connections, want the request after GOAWAY on a new one", got)
				}
				want := fmt.Sprintf("aborted: goaway %v", code)
				ts.waitReason(t, func(r string) bool { return r == want })
			})
		}
	}
}

func TestAbortCloseAndReset(t *testing.T) {
	kinds := []struct {
		kind   wire.AbortKind
		reason string
	}{
		{wire.AbortClose, "aborted: close"},
		{wire.AbortReset, "aborted: reset"},
	}
	for _, k := range kinds {
		for _, client := range allClients {
			t.Run(k.kind.String()+"/"+string(client), func(t *testing.T) {
				errs := make(chan error, 1)
				ts := serverFor(t, client, abortHandler(3000, k.kind, 0, errs))
				resp, err := ts.client(t, client).Get(ts.url() + "/abort")
				if err == nil {
					var b []byte
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if k.kind == wire.AbortClose && len(b) != 3000 {
						t.Errorf("got %d bytes before the close, want 3000", len(b))
					}
				}
				if err == nil || errors.Is(err, io.EOF) {
					t.Errorf("client error %v, want a failure (never a clean EOF)", err)
				}
				if err := <-errs; err != nil {
					t.Error(err)
				}
				ts.waitReason(t, func(r string) bool { return r == k.reason })
			})
		}
	}
}

func TestAbortUnsupportedKind(t *testing.T) {
	got := make(chan error, 1)
	ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		got <- w.Abort(wire.AbortKind("stalled"), 0) // an End that is no abort
	}))
	resp, err := ts.client(t, xnetTLS).Get(ts.url())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := <-got; !errors.Is(err, wire.ErrUnsupported) {
		t.Errorf("Abort(stalled) = %v, want ErrUnsupported", err)
	}
}
