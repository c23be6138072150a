package originemu

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

// handshakeTimeout bounds a TLS handshake, so a silent client cannot hold a
// goroutine forever.
const handshakeTimeout = 10 * time.Second

// runConn applies the listener's profile to c and returns why it closed.
func (e *Emulator) runConn(l *listener, c net.Conn, info *wire.ConnInfo) string {
	// The state when the connection arrived decides how it is handled.
	state, tlsCfg := l.st.current()
	if !l.allowed(info.Peer) {
		e.openConn(info, state)
		wire.ResetConn(c)
		return fmt.Sprintf("denied: %s is not in the allow-list", addrString(info.Peer))
	}
	switch {
	case state == Blackhole:
		e.openConn(info, state)
		return blackhole(c)
	case state.TLS():
		tc, err := e.handshake(state, tlsCfg, c, info)
		e.openConn(info, state)
		if err != nil {
			c.Close()
			return "tls handshake failed: " + err.Error()
		}
		c = tc
	default:
		e.openConn(info, state)
	}
	if info.ALPN == "h2" || state == H2C {
		return e.h2.ServeConn(e.ctx, c, info)
	}
	return e.http1.ServeConn(e.ctx, c, info)
}

// blackhole reads and discards whatever the client sends and never answers.
func blackhole(c net.Conn) string {
	_, err := io.Copy(io.Discard, c)
	c.Close()
	if err != nil {
		return "blackhole: " + err.Error()
	}
	return "blackhole: client closed"
}

func (l *listener) allowed(peer net.Addr) bool {
	if len(l.allow) == 0 {
		return true
	}
	ta, ok := peer.(*net.TCPAddr)
	if !ok {
		return false
	}
	a, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return false
	}
	a = a.Unmap()
	return slices.ContainsFunc(l.allow, func(p netip.Prefix) bool { return p.Contains(a) })
}

// handshake runs the TLS handshake, recording what the client offered even
// when the handshake fails.
func (e *Emulator) handshake(state Profile, tlsCfg *tls.Config, c net.Conn, info *wire.ConnInfo) (*tls.Conn, error) {
	cfg := tlsCfg.Clone()
	strictH2 := state == H2
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		info.SNI = hello.ServerName
		info.OfferedALPN = slices.Clone(hello.SupportedProtos)
		if strictH2 && !slices.Contains(hello.SupportedProtos, "h2") {
			return nil, fmt.Errorf("refused: the client did not offer h2 in ALPN (offered %q)", hello.SupportedProtos)
		}
		return nil, nil
	}
	tc := tls.Server(c, cfg)
	ctx, cancel := context.WithTimeout(e.ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	st := tc.ConnectionState()
	info.ALPN = st.NegotiatedProtocol
	info.TLSVersion = tls.VersionName(st.Version)
	return tc, nil
}

// hostNames are the names every test-CA leaf carries besides the SNI.
var hostNames = []string{"localhost", "127.0.0.1", "::1"}

// tlsConfig builds the listener's TLS configuration.
func (e *Emulator) tlsConfig(lc ListenerConfig) (*tls.Config, error) {
	cfg := &tls.Config{NextProtos: alpn(lc.Profile), MinVersion: tls.VersionTLS12}
	certFile, keyFile := lc.CertFile, lc.KeyFile
	if certFile == "" && keyFile == "" {
		certFile, keyFile = e.cfg.CertFile, e.cfg.KeyFile
	}
	switch lc.Profile {
	case TLSExpired:
		cfg.GetCertificate = func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
			return e.ca.ExpiredLeaf(append([]string{sniOrLocal(h)}, hostNames...)...)
		}
	case TLSWrongName:
		cfg.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return e.ca.Leaf(WrongName)
		}
	case TLSUntrusted:
		cfg.GetCertificate = e.foreign.GetCertificate(hostNames...)
	default:
		if certFile != "" || keyFile != "" {
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				return nil, fmt.Errorf("loading certFile/keyFile: %w", err)
			}
			cfg.Certificates = []tls.Certificate{cert}
			return cfg, nil
		}
		cfg.GetCertificate = e.ca.GetCertificate(hostNames...)
	}
	return cfg, nil
}

func sniOrLocal(h *tls.ClientHelloInfo) string {
	if h.ServerName != "" {
		return h.ServerName
	}
	return "localhost"
}
