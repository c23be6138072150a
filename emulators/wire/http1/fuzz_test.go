package http1

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

// FuzzServeConn feeds arbitrary bytes to a connection: the server must
// neither panic nor hang.
func FuzzServeConn(f *testing.F) {
	for _, seed := range []string{
		"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX: y\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
		"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nHEAD / HTTP/1.0\r\n\r\n",
		"\r\n\r\nGET / HTTP/1.1\nHost: h\nX: a\n b\n\n",
		"GET / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"GET /abort HTTP/1.1\r\nHost: h\r\n\r\n",
		"GET /panic HTTP/1.1\r\nHost: h\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	srv := &Server{
		Handler: wire.HandlerFunc(func(w wire.ResponseWriter, r *wire.Request) {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
			switch r.URL.Path {
			case "/abort":
				w.Abort(wire.AbortReset, 0)
			case "/panic":
				panic("fuzz")
			}
			w.Write(body)
		}),
		Logger:      discardLogger(),
		IdleTimeout: 200 * time.Millisecond,
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		server, client := tcpPair(t)
		go func() {
			client.Write(input)
			client.(*net.TCPConn).CloseWrite()
		}()
		go io.Copy(io.Discard, client)
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.ServeConn(context.Background(), server, nil)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("ServeConn hung on %q", input)
		}
	})
}
