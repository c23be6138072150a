package h2

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

// testServer runs a Server on 127.0.0.1 with an accept loop, over TLS with
// ALPN h2 or as cleartext h2c.
type testServer struct {
	srv      *Server
	ln       net.Listener
	tls      bool
	addr     string
	roots    *x509.CertPool
	accepted atomic.Int32

	mu      sync.Mutex
	reasons []string
	cond    *sync.Cond

	cancel context.CancelFunc
	conns  sync.WaitGroup
}

type serverOption func(*Server)

func withMaxStreams(n uint32) serverOption                              { return func(s *Server) { s.MaxConcurrentStreams = n } }
func withIdle(d time.Duration) serverOption                             { return func(s *Server) { s.IdleTimeout = d } }
func withLogger(l *slog.Logger) serverOption                            { return func(s *Server) { s.Logger = l } }
func quietLogger() *slog.Logger                                         { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
func handlerOf(f func(wire.ResponseWriter, *wire.Request)) wire.Handler { return wire.HandlerFunc(f) }

// newTLSServer starts a TLS (ALPN h2) test server.
func newTLSServer(t testing.TB, h wire.Handler, opts ...serverOption) *testServer {
	return startServer(t, h, true, opts)
}

// newH2CServer starts a cleartext (prior knowledge) test server.
func newH2CServer(t testing.TB, h wire.Handler, opts ...serverOption) *testServer {
	return startServer(t, h, false, opts)
}

func startServer(t testing.TB, h wire.Handler, useTLS bool, opts []serverOption) *testServer {
	t.Helper()
	srv := &Server{Handler: h, Logger: quietLogger()}
	for _, o := range opts {
		o(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{srv: srv, ln: ln, tls: useTLS, addr: ln.Addr().String(), cancel: cancel}
	ts.cond = sync.NewCond(&ts.mu)
	var conf *tls.Config
	if useTLS {
		cert, roots := selfSignedCert(t)
		ts.roots = roots
		conf = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}
	}
	ts.conns.Add(1)
	go ts.acceptLoop(ctx, conf)
	t.Cleanup(ts.close(t))
	return ts
}

func (ts *testServer) acceptLoop(ctx context.Context, conf *tls.Config) {
	defer ts.conns.Done()
	for {
		nc, err := ts.ln.Accept()
		if err != nil {
			return
		}
		ts.accepted.Add(1)
		ts.conns.Add(1)
		go func() {
			defer ts.conns.Done()
			ts.record(ts.serve(ctx, nc, conf))
		}()
	}
}

func (ts *testServer) serve(ctx context.Context, nc net.Conn, conf *tls.Config) string {
	info := &wire.ConnInfo{ID: uint64(ts.accepted.Load()), Peer: nc.RemoteAddr(), Local: nc.LocalAddr(), Opened: time.Now()}
	if conf == nil {
		return ts.srv.ServeConn(ctx, nc, info)
	}
	tc := tls.Server(nc, conf)
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = nc.Close()
		return "handshake: " + err.Error()
	}
	st := tc.ConnectionState()
	info.ALPN, info.SNI = st.NegotiatedProtocol, st.ServerName
	return ts.srv.ServeConn(ctx, tc, info)
}

func (ts *testServer) record(reason string) {
	ts.mu.Lock()
	ts.reasons = append(ts.reasons, reason)
	ts.cond.Broadcast()
	ts.mu.Unlock()
}

// waitReason waits until some connection ended with a reason for which
// match returns true, and returns it.
func (ts *testServer) waitReason(t testing.TB, match func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	timer := time.AfterFunc(10*time.Second, func() {
		ts.mu.Lock()
		ts.cond.Broadcast()
		ts.mu.Unlock()
	})
	defer timer.Stop()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for {
		for _, r := range ts.reasons {
			if match(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no connection ended as expected; reasons: %q", ts.reasons)
		}
		ts.cond.Wait()
	}
}

func (ts *testServer) close(t testing.TB) func() {
	return func() {
		ts.cancel()
		_ = ts.ln.Close()
		done := make(chan struct{})
		go func() { ts.conns.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("ServeConn did not return after shutdown")
		}
	}
}

// url is the base URL of the server.
func (ts *testServer) url() string {
	if ts.tls {
		return "https://" + ts.addr
	}
	return "http://" + ts.addr
}

// clientKind names one of the clients the tests use.
type clientKind string

const (
	xnetTLS    clientKind = "x/net-h2"
	netHTTPTLS clientKind = "net/http-h2"
	xnetH2C    clientKind = "x/net-h2c"
)

// client returns an *http.Client of the given kind for ts, closed when the
// test ends.
func (ts *testServer) client(t testing.TB, kind clientKind) *http.Client {
	t.Helper()
	var rt http.RoundTripper
	switch kind {
	case xnetTLS:
		tr := &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.roots}}
		t.Cleanup(tr.CloseIdleConnections)
		rt = tr
	case netHTTPTLS:
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.roots}, ForceAttemptHTTP2: true}
		t.Cleanup(tr.CloseIdleConnections)
		rt = tr
	case xnetH2C:
		tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}
		t.Cleanup(tr.CloseIdleConnections)
		rt = tr
	default:
		t.Fatalf("unknown client %q", kind)
	}
	return &http.Client{Transport: rt, Timeout: 60 * time.Second}
}

// clientConn dials one connection and returns an http2.ClientConn on it:
// RoundTrip on it does not retry, so errors come back as they happened.
func (ts *testServer) clientConn(t testing.TB) *http2.ClientConn {
	t.Helper()
	var nc net.Conn
	var err error
	if ts.tls {
		nc, err = tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.roots, NextProtos: []string{"h2"}})
	} else {
		nc, err = net.Dial("tcp", ts.addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	tr := &http2.Transport{}
	cc, err := tr.NewClientConn(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// selfSignedCert makes a certificate for 127.0.0.1 and a pool trusting it.
func selfSignedCert(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "h2 test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots
}
