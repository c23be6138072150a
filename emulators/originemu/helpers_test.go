package originemu

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/wire"
	"golang.org/x/net/http2"
)

// allProfiles is a config with one listener per profile, named after it.
func allProfiles() Config {
	var cfg Config
	for _, p := range Profiles {
		cfg.Listeners = append(cfg.Listeners, ListenerConfig{Name: string(p), Profile: p})
	}
	return cfg
}

func startEmu(t testing.TB, cfg Config) *Emulator {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("starting emulator: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// clientFor returns an HTTP client that speaks the listener's protocol and
// trusts the emulator's CA, with serverName as SNI/Host for TLS.
func clientFor(t testing.TB, e *Emulator, listener, serverName string) *http.Client {
	t.Helper()
	l, ok := e.Listener(listener)
	if !ok {
		t.Fatalf("no listener %q", listener)
	}
	tlsCfg := &tls.Config{RootCAs: e.CA().Pool(), ServerName: serverName}
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	switch l.Profile {
	case H2, TLSExpired, TLSWrongName, TLSUntrusted:
		return &http.Client{Transport: &http2.Transport{TLSClientConfig: tlsCfg}, CheckRedirect: noRedirect}
	case H2C:
		return &http.Client{CheckRedirect: noRedirect, Transport: &http2.Transport{
			AllowHTTP: true,
			DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			},
		}}
	case HTTPS:
		tr := &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: true}
		return &http.Client{Transport: tr, CheckRedirect: noRedirect}
	}
	return &http.Client{Transport: &http.Transport{}, CheckRedirect: noRedirect}
}

func get(t testing.TB, c *http.Client, url string, hdr ...string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

func mustAdd(t testing.TB, e *Emulator, rs ...rules.Rule) []rules.Rule {
	t.Helper()
	out, err := e.AddRules(rs...)
	if err != nil {
		t.Fatalf("adding rules: %v", err)
	}
	return out
}

func waitEnded(t testing.TB, e *Emulator, q journal.Query, n int) []journal.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reqs, err := e.Journal().WaitEnded(ctx, q, n)
	if err != nil {
		t.Fatalf("waiting for %d ended requests matching %+v: %v (have %d)", n, q, err, len(reqs))
	}
	return reqs
}

func ptr[T any](v T) *T { return &v }

type wireField = wire.HeaderField

func waitConns(t testing.TB, e *Emulator, q journal.Query, n int, match func(*journal.Conn) bool) []journal.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conns, err := e.Journal().WaitConns(ctx, q, n, match)
	if err != nil {
		t.Fatalf("waiting for %d connections matching %+v: %v (have %+v)", n, q, err, e.Journal().Query(q).Conns)
	}
	return conns
}
