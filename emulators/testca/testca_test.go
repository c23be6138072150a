package testca

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func newCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := New(name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// handshake runs a TLS handshake over a loopback TCP connection (buffered,
// unlike net.Pipe, so alerts cannot deadlock) between a server using srvCfg
// and a client using cliCfg, returning the client's connection state and
// handshake error. It does not use *testing.T, so it may run in any goroutine.
func handshake(srvCfg, cliCfg *tls.Config) (tls.ConnectionState, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return tls.ConnectionState{}, fmt.Errorf("listening: %w", err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		tls.Server(c, srvCfg).Handshake() // errors are observed on the client side
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		ln.Close()
		<-done
		return tls.ConnectionState{}, fmt.Errorf("dialing: %w", err)
	}
	raw.SetDeadline(time.Now().Add(30 * time.Second))
	cli := tls.Client(raw, cliCfg)
	err = cli.Handshake()
	raw.Close()
	<-done
	return cli.ConnectionState(), err
}

func TestNewCA(t *testing.T) {
	ca := newCA(t, "edge test CA")
	block, rest := pem.Decode(ca.CertPEM())
	if block == nil || block.Type != "CERTIFICATE" || len(rest) != 0 {
		t.Fatal("CertPEM is not a single PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !cert.IsCA || cert.Subject.CommonName != "edge test CA" {
		t.Fatalf("IsCA=%v CN=%q", cert.IsCA, cert.Subject.CommonName)
	}
	if err := cert.CheckSignatureFrom(cert); err != nil {
		t.Fatalf("not self-signed: %v", err)
	}
	now := time.Now()
	if !cert.NotBefore.Before(now.Add(-50*time.Minute)) || cert.NotAfter.Before(now.AddDate(10, 0, -1)) {
		t.Fatalf("validity %v..%v", cert.NotBefore, cert.NotAfter)
	}
	// CertPEM returns a copy.
	p := ca.CertPEM()
	p[0] = 'X'
	if ca.CertPEM()[0] == 'X' {
		t.Fatal("CertPEM exposes internal buffer")
	}
}

func TestHandshake(t *testing.T) {
	ca := newCA(t, "primary CA")
	other := newCA(t, "other")
	otherLeaf, err := other.Leaf("primary.test")
	if err != nil {
		t.Fatal(err)
	}
	expired, err := ca.ExpiredLeaf("primary.test")
	if err != nil {
		t.Fatal(err)
	}
	fixed := func(c *tls.Certificate) *tls.Config {
		return &tls.Config{Certificates: []tls.Certificate{*c}}
	}
	dynamic := &tls.Config{GetCertificate: ca.GetCertificate("localhost", "127.0.0.1", "::1")}

	tests := []struct {
		name       string
		srv        *tls.Config
		serverName string
		check      func(t *testing.T, err error)
	}{
		{"ok", dynamic, "primary.test", func(t *testing.T, err error) {
			if err != nil {
				t.Fatal(err)
			}
		}},
		{"hostname mismatch", &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return ca.Leaf("primary.test")
		}}, "wrong.test", func(t *testing.T, err error) {
			var he x509.HostnameError
			if !errors.As(err, &he) {
				t.Fatalf("err = %v (%T), want x509.HostnameError", err, err)
			}
		}},
		{"expired", fixed(expired), "primary.test", func(t *testing.T, err error) {
			var ce x509.CertificateInvalidError
			if !errors.As(err, &ce) || ce.Reason != x509.Expired {
				t.Fatalf("err = %v (%T), want x509.CertificateInvalidError{Reason: Expired}", err, err)
			}
		}},
		{"unknown authority", fixed(otherLeaf), "primary.test", func(t *testing.T, err error) {
			var ue x509.UnknownAuthorityError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v (%T), want x509.UnknownAuthorityError", err, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := handshake(tt.srv, &tls.Config{RootCAs: ca.Pool(), ServerName: tt.serverName})
			tt.check(t, err)
			if err == nil {
				leaf := st.PeerCertificates[0]
				if err := leaf.VerifyHostname(tt.serverName); err != nil {
					t.Fatalf("leaf does not cover %q: %v", tt.serverName, err)
				}
				if len(st.PeerCertificates) != 1 {
					t.Fatalf("chain length %d, want leaf only", len(st.PeerCertificates))
				}
			}
		})
	}
}

func TestIPSANOverTCP(t *testing.T) {
	ca := newCA(t, "ip CA")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{GetCertificate: ca.GetCertificate("localhost", "127.0.0.1", "::1")})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.WriteString(c, "hello")
			}()
		}
	}()
	for _, cfg := range []*tls.Config{
		{RootCAs: ca.Pool()},                          // verifies against the dialed IP, no SNI
		{RootCAs: ca.Pool(), ServerName: "localhost"}, // SNI
	} {
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			t.Fatalf("dial (ServerName %q): %v", cfg.ServerName, err)
		}
		b, err := io.ReadAll(c)
		c.Close()
		if err != nil || string(b) != "hello" {
			t.Fatalf("read = %q, %v", b, err)
		}
	}
	leaf, err := ca.Leaf("127.0.0.1", "::1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	if len(leaf.Leaf.IPAddresses) != 2 || len(leaf.Leaf.DNSNames) != 1 {
		t.Fatalf("IPs %v DNS %v", leaf.Leaf.IPAddresses, leaf.Leaf.DNSNames)
	}
}

func TestLeafProperties(t *testing.T) {
	ca := newCA(t, "props")
	c, err := ca.Leaf("b.test", "a.test", "10.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	l := c.Leaf
	if len(l.ExtKeyUsage) != 1 || l.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Fatalf("EKU = %v", l.ExtKeyUsage)
	}
	if l.IsCA {
		t.Fatal("leaf is a CA")
	}
	now := time.Now()
	if !l.NotBefore.Before(now.Add(-50*time.Minute)) || l.NotAfter.Before(now.AddDate(1, 0, -1)) || l.NotAfter.After(now.AddDate(1, 0, 1)) {
		t.Fatalf("validity %v..%v", l.NotBefore, l.NotAfter)
	}
	if _, err := l.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "a.test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: "10.0.0.1"}); err != nil {
		t.Fatal(err)
	}
	e, err := ca.ExpiredLeaf("a.test")
	if err != nil {
		t.Fatal(err)
	}
	if !e.Leaf.NotAfter.Before(now.Add(-23*time.Hour)) || !e.Leaf.NotBefore.Before(now.Add(-47*time.Hour)) {
		t.Fatalf("expired validity %v..%v", e.Leaf.NotBefore, e.Leaf.NotAfter)
	}
	if _, err := ca.Leaf(); err == nil {
		t.Fatal("Leaf() with no names succeeded")
	}
	if _, err := ca.Leaf("."); err == nil {
		t.Fatal(`Leaf(".") succeeded`)
	}
}

func TestCache(t *testing.T) {
	ca := newCA(t, "cache")
	tests := []struct {
		a, b []string
		same bool
	}{
		{[]string{"x.test"}, []string{"x.test"}, true},
		{[]string{"x.test", "y.test"}, []string{"y.test", "x.test"}, true},
		{[]string{"x.test", "x.test"}, []string{"X.TEST."}, true},
		{[]string{"::1", "127.0.0.1"}, []string{"127.0.0.1", "0:0:0:0:0:0:0:1"}, true},
		{[]string{"x.test"}, []string{"y.test"}, false},
		{[]string{"x.test"}, []string{"x.test", "y.test"}, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.a, tt.b), func(t *testing.T) {
			a, err := ca.Leaf(tt.a...)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ca.Leaf(tt.b...)
			if err != nil {
				t.Fatal(err)
			}
			if (a == b) != tt.same {
				t.Fatalf("same = %v, want %v", a == b, tt.same)
			}
		})
	}
	live, _ := ca.Leaf("x.test")
	dead, _ := ca.ExpiredLeaf("x.test")
	if live == dead {
		t.Fatal("Leaf and ExpiredLeaf share a cache entry")
	}
	if again, _ := ca.ExpiredLeaf("x.test"); again != dead {
		t.Fatal("ExpiredLeaf not cached")
	}
}

func TestConcurrent(t *testing.T) {
	ca := newCA(t, "storm")
	sets := [][]string{{"a.test"}, {"b.test"}, {"a.test", "b.test"}, {"127.0.0.1"}}
	const workers = 32
	results := make([][]*tls.Certificate, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range 20 {
				c, err := ca.Leaf(sets[(w+i)%len(sets)]...)
				if err != nil {
					t.Error(err)
					return
				}
				results[w] = append(results[w], c)
			}
		})
	}
	// Concurrent handshakes through GetCertificate.
	for range 8 {
		wg.Go(func() {
			_, err := handshake(&tls.Config{GetCertificate: ca.GetCertificate("localhost")},
				&tls.Config{RootCAs: ca.Pool(), ServerName: "a.test"})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	byKey := map[string]*tls.Certificate{}
	for w, rs := range results {
		for i, c := range rs {
			k := fmt.Sprint(sets[(w+i)%len(sets)])
			if prev, ok := byKey[k]; ok && prev != c {
				t.Fatalf("different certificates for %s", k)
			}
			byKey[k] = c
		}
	}
	// 4 sets plus {a.test, localhost} from the handshakes.
	if got := ca.generated.Load(); got != int64(len(sets)+1) {
		t.Fatalf("generated %d leaves, want %d", got, len(sets)+1)
	}
}

func TestWriteFiles(t *testing.T) {
	ca := newCA(t, "files")
	c, err := ca.Leaf("files.test")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := WriteFiles(c, certPath, keyPath); err != nil {
		t.Fatal(err)
	}
	loaded, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(&tls.Config{Certificates: []tls.Certificate{loaded}},
		&tls.Config{RootCAs: ca.Pool(), ServerName: "files.test"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFiles(c, filepath.Join(dir, "missing", "c.pem"), keyPath); err == nil {
		t.Fatal("WriteFiles into a missing directory succeeded")
	}
	if err := WriteFiles(&tls.Certificate{}, certPath, keyPath); err == nil {
		t.Fatal("WriteFiles of an empty certificate succeeded")
	}
}
