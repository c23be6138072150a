package h1serve

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/reference/receive"
)

// panicLog records the server's error records (a recovered panic is one).
type panicLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *panicLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *panicLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		l.mu.Lock()
		l.msgs = append(l.msgs, r.Message)
		l.mu.Unlock()
	}
	return nil
}
func (l *panicLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *panicLog) WithGroup(string) slog.Handler      { return l }

// Whatever a client sends, a connection ends without a panic (the server
// recovers one and logs it: that record fails the test) and without
// hanging: requests, bodies, trailers, pipelining, refusals.
func FuzzServeConn(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Add("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n5\r\nhello\r\n0\r\nX: y\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n")
	f.Add("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		log := &panicLog{}
		h := &checking{}
		srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/flush" {
				w.Write([]byte("x"))
				http.NewResponseController(w).Flush()
			}
			h.ServeHTTP(w, r)
			io.Copy(io.Discard, r.Body)
		}), Logger: slog.New(log), ReadHeaderTimeout: time.Second, Limits: receive.DefaultLimits()}
		srv.init()
		defer srv.Close()
		client, server := net.Pipe()
		c := newConn(srv, server)
		srv.track(c)
		done := make(chan struct{})
		go func() { defer close(done); c.serve() }()
		go io.Copy(io.Discard, client)
		_ = client.SetWriteDeadline(time.Now().Add(time.Second))
		io.WriteString(client, raw)
		client.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("the connection did not end within 5s of the client closing:\n%q", raw)
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		for _, m := range log.msgs {
			if strings.Contains(m, "panic") {
				t.Fatalf("%s for %q", m, raw)
			}
		}
	})
}
