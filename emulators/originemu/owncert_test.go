package originemu

import (
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/testca"
	"golang.org/x/net/http2"
)

// A user's own certificate replaces the test CA's on serving listeners, so a
// CDN that trusts only that certificate's issuer can reach the emulator.
func TestOwnCertificate(t *testing.T) {
	ca, err := testca.New("my public CA")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Leaf("origin.example.com")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := testca.WriteFiles(leaf, certFile, keyFile); err != nil {
		t.Fatal(err)
	}
	e := startEmu(t, Config{CertFile: certFile, KeyFile: keyFile, Listeners: []ListenerConfig{
		{Name: "https", Profile: HTTPS}, {Name: "h2", Profile: H2},
	}})
	for _, tc := range []struct {
		listener string
		rt       http.RoundTripper
	}{
		{"https", &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "origin.example.com"}}},
		{"h2", &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "origin.example.com"}}},
	} {
		resp, _, err := get(t, &http.Client{Transport: tc.rt}, e.URL(tc.listener)+"/x")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s with the user's certificate: %v %v", tc.listener, resp, err)
		}
	}
	// The emulator's own test CA is not what the listener presents.
	_, err = tls.Dial("tcp", e.Addr("https"), &tls.Config{RootCAs: e.CA().Pool(), ServerName: "origin.example.com"})
	if err == nil {
		t.Fatal("listener with a user certificate still presents a test-CA leaf")
	}
}

func TestFileObject(t *testing.T) {
	path := filepath.Join(t.TempDir(), "manifest.m3u8")
	content := "#EXTM3U\n#EXT-X-VERSION:3\nseg1.ts\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	e := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "http", Profile: HTTP}}})
	if err := e.PutObjects(objects.Spec{Path: "/live/index.m3u8", File: path, ContentType: "application/vnd.apple.mpegurl"}); err != nil {
		t.Fatal(err)
	}
	resp, body, err := get(t, clientFor(t, e, "http", ""), e.URL("http")+"/live/index.m3u8", "Range", "bytes=0-6")
	if err != nil || resp.StatusCode != 206 || string(body) != content[:7] || resp.Header.Get("Etag") == "" {
		t.Fatalf("file object: %v %q %v", resp, body, err)
	}
	if err := e.PutObjects(objects.Spec{Path: "/missing", File: "/nonexistent/file"}); err == nil {
		t.Fatal("a missing file was accepted")
	}
}
