package upstream

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/edgeconform/edgeconform/reference/config"
)

// benchOrigin answers every request with a fixed 1 KiB response from a
// precomputed buffer, allocating nothing per request, so a benchmark's
// allocations are the client's.
func benchOrigin(b *testing.B) Target {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nCache-Control: max-age=60\r\nContent-Length: 1024\r\n\r\n" + strings.Repeat("x", 1024))
	var wg sync.WaitGroup
	b.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							return
						}
						if len(line) <= 2 {
							break
						}
					}
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			})
		}
	})
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(p)
	return Target{Protocol: config.ProtocolHTTP, Address: "127.0.0.1", Port: port, Host: "origin.test"}
}

// BenchmarkH1RoundTrip is one 1 KiB GET (RoundTrip, read the body, Close)
// over loopback keep-alive, through the pool (h1pool.go) and through
// net/http's Transport set up as Client used it before issue #14 (the
// request cloned onto the target's URL), serially and from parallel
// goroutines; allocs/op are the client's.
func BenchmarkH1RoundTrip(b *testing.B) {
	for _, impl := range []string{"pool", "net-http"} {
		for _, parallel := range []bool{false, true} {
			name := impl + "/serial"
			if parallel {
				name = impl + "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				tgt := benchOrigin(b)
				roundTrip := benchRoundTrip(b, impl, tgt)
				one := func(buf []byte) {
					ctx, cancel := context.WithCancelCause(context.Background())
					resp, err := roundTrip(ctx, newBenchReq())
					if err != nil {
						b.Error(err)
						cancel(nil)
						return
					}
					for {
						if _, err := resp.Body.Read(buf); err == io.EOF {
							break
						} else if err != nil {
							b.Error(err)
							break
						}
					}
					resp.Body.Close()
					cancel(nil)
				}
				b.ReportAllocs()
				b.ResetTimer()
				if !parallel {
					buf := make([]byte, 32<<10)
					for b.Loop() {
						one(buf)
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					buf := make([]byte, 32<<10)
					for pb.Next() {
						one(buf)
					}
				})
			})
		}
	}
}

// benchRoundTrip is a round trip to tgt through the pool (a Client) or
// through an http.Transport with the settings Client gave it.
func benchRoundTrip(b *testing.B, impl string, tgt Target) func(context.Context, *http.Request) (*http.Response, error) {
	if impl == "pool" {
		c := New(Options{Logger: slog.New(slog.DiscardHandler)})
		b.Cleanup(c.Close)
		return func(ctx context.Context, req *http.Request) (*http.Response, error) {
			return c.RoundTrip(ctx, tgt, req)
		}
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	addr := net.JoinHostPort(tgt.Address, strconv.Itoa(tgt.Port))
	tr := &http.Transport{DisableCompression: true, MaxConnsPerHost: DefaultMaxConnsPerTarget,
		MaxIdleConnsPerHost: DefaultMaxConnsPerTarget, IdleConnTimeout: DefaultIdleTimeout, Protocols: protocols,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		}}
	b.Cleanup(tr.CloseIdleConnections)
	return func(ctx context.Context, req *http.Request) (*http.Response, error) {
		out := req.Clone(ctx)
		out.URL = &url.URL{Scheme: "http", Host: tgt.Host, Path: req.URL.Path}
		out.Host = tgt.Host
		return tr.RoundTrip(out)
	}
}

// newBenchReq is a request as fetch builds one: its own header map.
func newBenchReq() *http.Request {
	return &http.Request{Method: "GET", URL: &url.URL{Path: "/obj/1k"}, Header: http.Header{
		"Accept": {"*/*"}, "Via": {"1.1 edge"}, "X-Forwarded-For": {"10.0.0.1"}}}
}
