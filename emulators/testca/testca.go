// Package testca is an in-memory certificate authority for TLS test origins.
//
// A [CA] issues ECDSA P-256 leaf certificates for DNS names and IP addresses
// on demand. Leaves are cached by their (sorted, de-duplicated) name set, so
// a storm of TLS handshakes does not generate keys repeatedly. Test clients
// trust the CA via [CA.Pool]; leaves are served without the CA certificate in
// the chain.
package testca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// CA is a test certificate authority. It is safe for concurrent use.
type CA struct {
	name    string
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte

	mu    sync.Mutex
	cache map[string]*cacheEntry

	// generated counts leaf key/certificate generations (for tests).
	generated atomic.Int64
}

// cacheEntry is a leaf being (or having been) generated; done is closed when
// cert and err are set. Concurrent requests for the same names wait on the
// same entry instead of generating their own.
type cacheEntry struct {
	done chan struct{}
	cert *tls.Certificate
	err  error
}

// New creates a self-signed ECDSA P-256 CA with name as its subject common
// name, valid from one hour ago until ten years from now.
func New(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("testca: generating key for CA %q: %w", name, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, fmt.Errorf("testca: creating CA %q: %w", name, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"edgeconform test CA"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("testca: self-signing CA %q: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("testca: parsing CA %q certificate: %w", name, err)
	}
	return &CA{
		name:    name,
		cert:    cert,
		key:     key,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		cache:   make(map[string]*cacheEntry),
	}, nil
}

// Certificate returns the parsed CA certificate. It must not be modified.
func (ca *CA) Certificate() *x509.Certificate { return ca.cert }

// CertPEM returns the CA certificate, PEM-encoded. The caller may modify the
// returned slice.
func (ca *CA) CertPEM() []byte { return slices.Clone(ca.certPEM) }

// Pool returns a new certificate pool that trusts only this CA, for use as a
// client's tls.Config.RootCAs.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

// Leaf returns a leaf certificate for names, each a DNS name or an IP
// address, with the serverAuth extended key usage, valid from one hour ago
// for one year. Leaves are cached by the set of names (order and duplicates
// do not matter; DNS names are case-insensitive), so repeated calls return
// the same *tls.Certificate, which callers must not modify.
func (ca *CA) Leaf(names ...string) (*tls.Certificate, error) {
	return ca.leaf(false, names)
}

// ExpiredLeaf is like [CA.Leaf] but returns a certificate that expired a day
// ago (valid from 48 hours ago until 24 hours ago).
func (ca *CA) ExpiredLeaf(names ...string) (*tls.Certificate, error) {
	return ca.leaf(true, names)
}

// GetCertificate returns a function for tls.Config.GetCertificate. It serves
// a leaf for the client's SNI server name plus the extra names (for example
// "localhost", "127.0.0.1", "::1"); when the client sends no SNI (as when it
// connects by IP address) the leaf covers just the extra names.
func (ca *CA) GetCertificate(extra ...string) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	extra = slices.Clone(extra)
	return func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		names := extra
		if hello.ServerName != "" {
			names = append(slices.Clip(extra), hello.ServerName)
		}
		return ca.Leaf(names...)
	}
}

// normalize returns the sorted, de-duplicated canonical forms of names: IPs
// in net.IP.String form, DNS names lower-cased without a trailing dot.
func normalize(names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, errors.New("no names given")
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			out = append(out, ip.String())
			continue
		}
		d := strings.TrimSuffix(strings.ToLower(n), ".")
		if d == "" {
			return nil, fmt.Errorf("invalid name %q", n)
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (ca *CA) leaf(expired bool, names []string) (*tls.Certificate, error) {
	kind := "leaf"
	if expired {
		kind = "expired leaf"
	}
	norm, err := normalize(names)
	if err != nil {
		return nil, fmt.Errorf("testca: issuing %s from %q for %q: %w", kind, ca.name, names, err)
	}
	key := kind + "\x00" + strings.Join(norm, "\x00")

	ca.mu.Lock()
	e, ok := ca.cache[key]
	if !ok {
		e = &cacheEntry{done: make(chan struct{})}
		ca.cache[key] = e
	}
	ca.mu.Unlock()
	if ok {
		<-e.done
		return e.cert, e.err
	}

	e.cert, e.err = ca.issue(expired, norm)
	if e.err != nil {
		e.err = fmt.Errorf("testca: issuing %s from %q for %q: %w", kind, ca.name, norm, e.err)
		// Do not cache failures: a later call may retry.
		ca.mu.Lock()
		delete(ca.cache, key)
		ca.mu.Unlock()
	}
	close(e.done)
	return e.cert, e.err
}

// issue generates a key and a certificate for the normalized names.
func (ca *CA) issue(expired bool, names []string) (*tls.Certificate, error) {
	ca.generated.Add(1)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	notBefore, notAfter := now.Add(-time.Hour), now.AddDate(1, 0, 0)
	if expired {
		notBefore, notAfter = now.Add(-48*time.Hour), now.Add(-24*time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: names[0]},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("signing certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate: %w", err)
	}
	return &tls.Certificate{
		Certificate: [][]byte{der},
		PrivateKey:  key,
		Leaf:        leaf,
	}, nil
}

func randomSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil // serial numbers must be positive
}

// WriteFiles writes cert's certificate chain to certPath and its private key
// (PKCS #8) to keyPath, both PEM-encoded, as accepted by tls.LoadX509KeyPair.
// The key file is created with mode 0600.
func WriteFiles(cert *tls.Certificate, certPath, keyPath string) error {
	if cert == nil || len(cert.Certificate) == 0 {
		return errors.New("testca: writing certificate files: empty certificate")
	}
	var certPEM []byte
	for _, der := range cert.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return fmt.Errorf("testca: marshaling private key for %s: %w", keyPath, err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
		return fmt.Errorf("testca: writing certificate: %w", err)
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return fmt.Errorf("testca: writing private key: %w", err)
	}
	return nil
}
