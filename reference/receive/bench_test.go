package receive

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
)

// benchServer serves h on loopback, through the receive step when
// wrapped.
func benchServer(b *testing.B, h http.Handler, wrapped bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	l := DefaultLimits()
	if wrapped {
		Configure(srv, l, slog.New(slog.DiscardHandler))
		go srv.Serve(Listener(ln, l, slog.New(slog.DiscardHandler)))
	} else {
		go srv.Serve(ln)
	}
	b.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// BenchmarkReceive measures what the receive step costs a server: small
// GETs on keep-alive connections, and a 64 MiB upload, with and without
// Listener and Configure (and Check in the handler).
func BenchmarkReceive(b *testing.B) {
	small := bytes.Repeat([]byte("x"), 1024)
	l := DefaultLimits()
	handler := func(wrapped bool) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if wrapped {
				if e := Check(r, l); e != nil {
					Answer(w, r, e)
					return
				}
			}
			if r.Method == http.MethodPost {
				io.Copy(io.Discard, r.Body)
				return
			}
			w.Write(small)
		})
	}
	for _, wrapped := range []bool{false, true} {
		name := "plain"
		if wrapped {
			name = "receive"
		}
		b.Run("small-get/"+name, func(b *testing.B) {
			url := benchServer(b, handler(wrapped), wrapped)
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := c.Get(url + "/obj")
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
		b.Run("upload-64MiB/"+name, func(b *testing.B) {
			url := benchServer(b, handler(wrapped), wrapped)
			body := make([]byte, 64<<20)
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				// Chunked: the framing follower parses every chunk.
				resp, err := c.Post(url+"/up", "application/octet-stream", io.MultiReader(bytes.NewReader(body)))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
