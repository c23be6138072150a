package h1serve

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// hitHandler answers as a cache hit does: a few fields, a 1 KiB body.
func hitHandler() http.Handler {
	body := bytes.Repeat([]byte("x"), 1<<10)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		h.Set("Cache-Status", "edge; hit")
		h.Set("Age", "3")
		w.Write(body)
	})
}

// BenchmarkServe: keep-alive GETs of a 1 KiB body over loopback, one
// connection per parallel client, on h1serve and on net/http's server.
func BenchmarkServe(b *testing.B) {
	for _, bc := range []struct {
		name  string
		serve func(ln net.Listener, h http.Handler) (stop func())
	}{
		{"h1serve", func(ln net.Listener, h http.Handler) func() {
			s := &Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
			go s.Serve(ln)
			return func() { s.Close() }
		}},
		{"net-http", func(ln net.Listener, h http.Handler) func() {
			s := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
			go s.Serve(ln)
			return func() { s.Close() }
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer bc.serve(ln, hitHandler())()
			req := []byte("GET /static/a.js HTTP/1.1\r\nHost: media.example.com\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n")
			b.ReportAllocs()
			b.SetParallelism(8) // 16 connections on 2 CPUs
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				nc, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Error(err)
					return
				}
				defer nc.Close()
				// Every response has the same length (Date's too): learn it from
				// the first, then read that many bytes, so that the client
				// costs little next to the server.
				if _, err := nc.Write(req); err != nil {
					b.Error(err)
					return
				}
				n, err := responseLen(bufio.NewReaderSize(nc, 1))
				if err != nil {
					b.Error(err)
					return
				}
				buf := make([]byte, n)
				for pb.Next() {
					if _, err := nc.Write(req); err != nil {
						b.Error(err)
						return
					}
					if _, err := io.ReadFull(nc, buf); err != nil || !bytes.HasPrefix(buf, []byte("HTTP/1.1 200 OK\r\n")) {
						b.Errorf("%q, %v", buf, err)
						return
					}
				}
			})
		})
	}
}

// responseLen reads one response byte by byte (br must not read ahead)
// and returns its length on the wire.
func responseLen(br *bufio.Reader) (int, error) {
	var cr countingReader
	cr.r = br
	resp, err := http.ReadResponse(bufio.NewReaderSize(&cr, 16), nil)
	if err != nil {
		return 0, err
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return cr.n, nil
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p[:1])
	c.n += n
	return n, err
}
