package edge

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/reference/h1serve"
	"github.com/edgeconform/edgeconform/reference/receive"
)

// serveH1 serves h as edgecache serve does, on reference/h1serve with
// the receive step's default limits (h2c handed to net/http), behind an
// httptest.Server whose URL and Client the tests use: its own listener
// only parks, the connections go to h1serve.
func serveH1(t testing.TB, h http.Handler, log *slog.Logger) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := receive.DefaultLimits()
	h2 := &http.Server{Handler: h, ErrorLog: slog.NewLogLogger(slog.DiscardHandler, slog.LevelWarn)} // h2 errors the tests cause
	receive.Configure(h2, lim, slog.New(slog.DiscardHandler))
	srv := &h1serve.Server{Handler: h, Limits: lim, ReadHeaderTimeout: 30 * time.Second, Logger: log, H2: h2}
	go srv.Serve(ln)
	ts := httptest.NewUnstartedServer(h)
	ts.Listener.Close()
	ts.Listener = &parked{addr: ln.Addr(), done: make(chan struct{})}
	ts.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ts.Close()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
	})
	return ts
}

// parked is a listener that accepts nothing until closed, with another's
// address.
type parked struct {
	addr net.Addr
	done chan struct{}
}

func (p *parked) Accept() (net.Conn, error) { <-p.done; return nil, net.ErrClosed }
func (p *parked) Close() error {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	return nil
}
func (p *parked) Addr() net.Addr { return p.addr }
