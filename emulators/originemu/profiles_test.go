package originemu

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

func TestServingProfiles(t *testing.T) {
	e := startEmu(t, allProfiles())
	tests := []struct {
		listener  string
		wantProto string
		wantALPN  string
	}{
		{"http", "HTTP/1.1", ""},
		{"h2c", "HTTP/2.0", ""},
		{"https", "HTTP/1.1", "http/1.1"},
		{"h2", "HTTP/2.0", "h2"},
	}
	for _, tc := range tests {
		t.Run(tc.listener, func(t *testing.T) {
			path := "/profile/" + tc.listener
			c := clientFor(t, e, tc.listener, "origin.test")
			resp, body, err := get(t, c, e.URL(tc.listener)+path, "X-First", "1", "X-Second", "2")
			if err != nil {
				t.Fatalf("GET: %v", err)
			}
			if resp.StatusCode != 200 || resp.Proto != tc.wantProto {
				t.Fatalf("got %d %s, want 200 %s", resp.StatusCode, resp.Proto, tc.wantProto)
			}
			want := synth.Object{Path: path, Size: objects.DefaultSize, Version: "1"}
			if err := synth.Verify(want, 0, body); err != nil || int64(len(body)) != want.Size {
				t.Fatalf("body is not the synthetic object (%d bytes): %v", len(body), err)
			}
			snap := e.Journal().Query(journal.Query{Listener: tc.listener})
			if len(snap.Requests) != 1 || len(snap.Conns) != 1 {
				t.Fatalf("journal has %d requests and %d conns, want 1 and 1", len(snap.Requests), len(snap.Conns))
			}
			r, conn := snap.Requests[0], snap.Conns[0]
			if r.Proto != tc.wantProto || r.Path != path || r.ConnID != conn.ID {
				t.Errorf("journal request = %+v", r)
			}
			if headerIndex(r, "x-first") < 0 || headerIndex(r, "x-second") < 0 {
				t.Errorf("headers not recorded: %v", r.Headers)
			}
			if tc.wantProto == "HTTP/2.0" && (len(r.Headers) < 4 || !strings.HasPrefix(r.Headers[0].Name, ":") || !strings.HasPrefix(r.Headers[3].Name, ":")) {
				t.Errorf("h2 pseudo-headers not first: %v", r.Headers)
			}
			if conn.ALPN != tc.wantALPN {
				t.Errorf("journal ALPN = %q, want %q", conn.ALPN, tc.wantALPN)
			}
			if tc.wantALPN != "" {
				if conn.SNI != "origin.test" || conn.TLSVersion == "" {
					t.Errorf("journal SNI/TLS = %q/%q, want origin.test and a version", conn.SNI, conn.TLSVersion)
				}
			}
		})
	}
}

func headerIndex(r journal.Request, name string) int {
	return slices.IndexFunc(r.Headers, func(h wireField) bool { return strings.EqualFold(h.Name, name) })
}

func TestHTTPSNeverNegotiatesH2(t *testing.T) {
	e := startEmu(t, allProfiles())
	conn, err := tls.Dial("tcp", e.Addr("https"), &tls.Config{RootCAs: e.CA().Pool(), ServerName: "origin.test", NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Fatalf("negotiated %q, want http/1.1", p)
	}
	// A client that insists on h2 is refused.
	_, err = tls.Dial("tcp", e.Addr("https"), &tls.Config{RootCAs: e.CA().Pool(), ServerName: "origin.test", NextProtos: []string{"h2"}})
	if err == nil {
		t.Fatal("an h2-only client completed a handshake with the https listener")
	}
}

func TestH2RefusesClientsWithoutH2(t *testing.T) {
	e := startEmu(t, allProfiles())
	for _, alpn := range [][]string{{"http/1.1"}, nil} {
		_, err := tls.Dial("tcp", e.Addr("h2"), &tls.Config{RootCAs: e.CA().Pool(), ServerName: "origin.test", NextProtos: alpn})
		if err == nil {
			t.Fatalf("client offering %q completed a handshake with the h2 listener", alpn)
		}
	}
	// net/http's HTTP/1.1-only client fails too.
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: e.CA().Pool()}, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}}
	if _, _, err := get(t, c, e.URL("h2")+"/x"); err == nil {
		t.Fatal("an HTTP/1.1-only client got a response from the h2 listener")
	}
	waitConns(t, e, journal.Query{Listener: "h2"}, 3, func(c *journal.Conn) bool {
		return strings.Contains(c.CloseReason, "did not offer h2")
	})
	if n := len(e.Journal().Query(journal.Query{Listener: "h2"}).Requests); n != 0 {
		t.Fatalf("h2 listener journaled %d requests from clients without h2", n)
	}
}

// TestHeaderOrder sends header fields in a non-sorted order on the wire and
// expects the journal to keep that order and spelling.
func TestHeaderOrder(t *testing.T) {
	e := startEmu(t, allProfiles())
	conn, err := net.Dial("tcp", e.Addr("http"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /order HTTP/1.1\r\nHost: origin.test\r\nzz-last: 1\r\nX-Middle: 2\r\nAAA-first: 3\r\nX-Middle: 4\r\nConnection: close\r\n\r\n")
	io.Copy(io.Discard, conn)
	reqs := waitEnded(t, e, journal.Query{PathPrefix: "/order"}, 1)
	var got []string
	for _, h := range reqs[0].Headers {
		got = append(got, h.Name+"="+h.Value)
	}
	want := "[Host=origin.test zz-last=1 X-Middle=2 AAA-first=3 X-Middle=4 Connection=close]"
	if fmt.Sprint(got) != want {
		t.Fatalf("journal headers %v, want %s", got, want)
	}
	if reqs[0].Host != "origin.test" || reqs[0].Proto != "HTTP/1.1" || reqs[0].URI != "/order" {
		t.Fatalf("journal request %+v", reqs[0])
	}
}

func TestTLSFaults(t *testing.T) {
	e := startEmu(t, allProfiles())
	tests := []struct {
		listener string
		check    func(error) bool
		want     string
	}{
		{"tls-expired", func(err error) bool {
			var ce x509.CertificateInvalidError
			return errors.As(err, &ce) && ce.Reason == x509.Expired
		}, "x509.CertificateInvalidError (Expired)"},
		{"tls-wrong-name", func(err error) bool {
			var he x509.HostnameError
			return errors.As(err, &he)
		}, "x509.HostnameError"},
		{"tls-untrusted", func(err error) bool {
			var ue x509.UnknownAuthorityError
			return errors.As(err, &ue)
		}, "x509.UnknownAuthorityError"},
	}
	for _, tc := range tests {
		t.Run(tc.listener, func(t *testing.T) {
			for _, alpn := range [][]string{{"h2"}, {"http/1.1"}} {
				_, err := tls.Dial("tcp", e.Addr(tc.listener), &tls.Config{RootCAs: e.CA().Pool(), ServerName: "origin.test", NextProtos: alpn})
				if !tc.check(err) {
					t.Fatalf("ALPN %v: handshake error = %v, want %s", alpn, err, tc.want)
				}
			}
			// Skipping verification, the listener serves (so the fault is
			// only the certificate).
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
			resp, _, err := get(t, c, e.URL(tc.listener)+"/ok")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("unverified GET: %v %v", resp, err)
			}
		})
	}
}

func TestConnectionFaults(t *testing.T) {
	e := startEmu(t, allProfiles())
	t.Run("refuse", func(t *testing.T) {
		_, err := net.DialTimeout("tcp", e.Addr("refuse"), time.Second)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("dial error = %v, want ECONNREFUSED", err)
		}
	})
	t.Run("syn-drop", func(t *testing.T) {
		const timeout = 300 * time.Millisecond
		start := time.Now()
		_, err := net.DialTimeout("tcp", e.Addr("syn-drop"), timeout)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("dial error = %v, want a timeout", err)
		}
		if el := time.Since(start); el < timeout {
			t.Fatalf("dial failed after %v, before its %v timeout", el, timeout)
		}
	})
	t.Run("blackhole", func(t *testing.T) {
		const wait = 300 * time.Millisecond
		c := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: wait}}
		_, _, err := get(t, c, e.URL("blackhole")+"/x")
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("GET error = %v, want a timeout awaiting headers", err)
		}
		snap := e.Journal().Query(journal.Query{Listener: "blackhole"})
		if len(snap.Conns) != 1 || len(snap.Requests) != 0 {
			t.Fatalf("journal: %d conns %d requests, want the connection and no request", len(snap.Conns), len(snap.Requests))
		}
	})
}

func TestAllowList(t *testing.T) {
	cfg := Config{Listeners: []ListenerConfig{
		{Name: "closed", Profile: HTTP, AllowFrom: []string{"10.0.0.0/8", "192.0.2.1"}},
		{Name: "open", Profile: HTTP, AllowFrom: []string{"127.0.0.0/8"}},
	}}
	e := startEmu(t, cfg)
	c := &http.Client{Transport: &http.Transport{}}
	if _, _, err := get(t, c, e.URL("closed")+"/x"); err == nil {
		t.Fatal("a peer outside the allow-list got a response")
	}
	if resp, _, err := get(t, c, e.URL("open")+"/x"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a peer inside the allow-list failed: %v", err)
	}
	waitConns(t, e, journal.Query{Listener: "closed"}, 1, func(c *journal.Conn) bool {
		return strings.HasPrefix(c.CloseReason, "denied: 127.0.0.1")
	})
	if n := len(e.Journal().Query(journal.Query{Listener: "closed"}).Requests); n != 0 {
		t.Fatalf("a denied peer's request was served: %d requests", n)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"no name", Config{Listeners: []ListenerConfig{{Profile: HTTP}}}, []string{"listeners[0].name: required"}},
		{"bad profile", Config{Listeners: []ListenerConfig{{Name: "a", Profile: "gopher"}}}, []string{"listeners[0].profile", "gopher"}},
		{"duplicate", Config{Listeners: []ListenerConfig{{Name: "a", Profile: HTTP}, {Name: "a", Profile: HTTP}}}, []string{"listeners[1].name", "used twice"}},
		{"bad cidr", Config{Listeners: []ListenerConfig{{Name: "a", Profile: HTTP, AllowFrom: []string{"10.0.0.0/99"}}}}, []string{"listeners[0].allowFrom[0]"}},
		{"bad cert", Config{Listeners: []ListenerConfig{{Name: "a", Profile: HTTPS, CertFile: "/nonexistent.pem", KeyFile: "/nonexistent.key"}}}, []string{"listeners[0]", "certFile"}},
		{"all at once", Config{Listeners: []ListenerConfig{{Profile: HTTP}, {Name: "b", Profile: "x"}}}, []string{"listeners[0].name", "listeners[1].profile"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil {
				t.Fatal("New accepted a bad config")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
