package http1

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

// testServer is a Server behind a real TCP listener on 127.0.0.1.
type testServer struct {
	srv     *Server
	addr    string
	reasons chan string // ServeConn results, one per connection
	logs    *syncBuffer
	tls     *tls.Config // non-nil: connections are wrapped in tls.Server
}

type serverOption func(*testServer)

func withTLS(cfg *tls.Config) serverOption { return func(ts *testServer) { ts.tls = cfg } }

func withServer(f func(*Server)) serverOption { return func(ts *testServer) { f(ts.srv) } }

// startServer serves h until the test ends; cleanup cancels the serving
// context and waits for every connection to finish.
func startServer(t testing.TB, h wire.HandlerFunc, opts ...serverOption) *testServer {
	t.Helper()
	logs := &syncBuffer{}
	ts := &testServer{
		srv:     &Server{Handler: h, Logger: slog.New(slog.NewTextHandler(logs, nil))},
		reasons: make(chan string, 1024),
		logs:    logs,
	}
	for _, o := range opts {
		o(ts)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	ts.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ids atomic.Uint64
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			info := &wire.ConnInfo{ID: ids.Add(1), Listener: "test", Peer: c.RemoteAddr(), Local: c.LocalAddr(), Opened: time.Now()}
			if ts.tls != nil {
				c = tls.Server(c, ts.tls)
			}
			wg.Go(func() {
				reason := ts.srv.ServeConn(ctx, c, info)
				select {
				case ts.reasons <- reason:
				default:
				}
			})
		}
	})
	t.Cleanup(func() {
		cancel()
		ln.Close()
		wg.Wait()
	})
	return ts
}

// reason waits for the next connection to end and returns its reason.
func (ts *testServer) reason(t testing.TB) string {
	t.Helper()
	select {
	case r := <-ts.reasons:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for ServeConn to return")
		return ""
	}
}

func (ts *testServer) url(path string) string {
	if ts.tls != nil {
		return "https://" + ts.addr + path
	}
	return "http://" + ts.addr + path
}

// dial opens a raw connection that the test closes at its end.
func (ts *testServer) dial(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// exchange writes raw request bytes and returns everything the server sends
// until it closes the connection.
func (ts *testServer) exchange(t testing.TB, request string) string {
	t.Helper()
	c := ts.dial(t)
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatalf("write request: %v", err)
	}
	got, err := io.ReadAll(c)
	c.Close()
	if err != nil {
		t.Fatalf("read response: %v (got %q)", err, got)
	}
	return string(got)
}

// newClient returns a net/http client whose idle connections close at the
// end of the test.
func newClient(t testing.TB, tr *http.Transport) *http.Client {
	if tr == nil {
		tr = &http.Transport{}
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// readResponse reads one response from br for a request with method.
func readResponse(t testing.TB, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response body: %v", err)
	}
	return resp, string(body)
}

// tcpPair returns both ends of a TCP connection on 127.0.0.1.
func tcpPair(t testing.TB) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client
}

// selfSignedTLS returns a server config with a fresh certificate for
// 127.0.0.1 and a pool that trusts it.
func selfSignedTLS(t testing.TB) (*tls.Config, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "http1 test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	cfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}}}
	return cfg, pool
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func isUnexpectedEOF(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }

func isConnReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
