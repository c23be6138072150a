package emucontainer_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"golang.org/x/net/http2"

	"github.com/edgeconform/edgeconform/deploy/dockertest"
	"github.com/edgeconform/edgeconform/emulators/emucontainer"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

func TestMain(m *testing.M) {
	dockertest.Setup()
	os.Exit(m.Run())
}

// TestRun starts one emulator container and drives it from the host: a TLS
// h2 listener verified with the CA the module returns, an object from the
// configuration, a rule from the configuration, and the journal.
func TestRun(t *testing.T) {
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	emu, err := emucontainer.Run(ctx,
		emucontainer.WithListener("web", "http"),
		emucontainer.WithListener("secure", "h2"),
		emucontainer.WithObjects(objects.Spec{Path: "/hello.txt", Body: ptr("hello\n"), ContentType: "text/plain"}),
		emucontainer.WithRules(rules.Rule{ID: "busy", Match: rules.Match{Path: "/busy"}, Action: rules.Action{Status: 503}}),
	)
	testcontainers.CleanupContainer(t, emu)
	if err != nil {
		t.Fatal(err)
	}
	if got := emu.Listeners["secure"]; got.Port != emucontainer.FirstListenerPort+1 || got.Profile != "h2" {
		t.Fatalf("listener secure = %+v, want port %d, profile h2", got, emucontainer.FirstListenerPort+1)
	}

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(emu.CA) {
		t.Fatalf("CA is not PEM: %q", emu.CA)
	}
	h2 := &http.Client{Transport: &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}, Timeout: 30 * time.Second}
	body := get(t, h2, emu.Listeners["secure"].URL+"/video/seg1.ts", 200, "HTTP/2.0")
	if err := synth.Verify(synth.Object{Path: "/video/seg1.ts", Size: 1024, Version: "1"}, 0, body); err != nil || len(body) != 1024 {
		t.Fatalf("synthetic body (%d bytes): %v", len(body), err)
	}

	web := &http.Client{Timeout: 30 * time.Second}
	if got := string(get(t, web, emu.Listeners["web"].URL+"/hello.txt", 200, "HTTP/1.1")); got != "hello\n" {
		t.Fatalf("configured object: got %q", got)
	}
	get(t, web, emu.Listeners["web"].URL+"/busy", 503, "HTTP/1.1")
	get(t, web, emu.Listeners["web"].URL+"/busy", 200, "HTTP/1.1") // times: 1 by default

	reqs, err := emu.Client().WaitEnded(ctx, journal.Query{Listener: "web"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if reqs[1].Path != "/busy" || reqs[1].Status != 503 || reqs[1].Rule != "busy" {
		t.Fatalf("journal: second request on web = %s %d rule %q, want /busy 503 rule busy", reqs[1].Path, reqs[1].Status, reqs[1].Rule)
	}
}

func get(t *testing.T, c *http.Client, url string, status int, proto string) []byte {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	if resp.StatusCode != status || resp.Proto != proto {
		t.Fatalf("GET %s: %d %s, want %d %s", url, resp.StatusCode, resp.Proto, status, proto)
	}
	return b
}

func ptr[T any](v T) *T { return &v }

// TestRunDefaults: without listeners the container runs one per profile,
// named after it, from port 8080 in the order of originemu.Profiles.
func TestRunDefaults(t *testing.T) {
	dockertest.Require(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	emu, err := emucontainer.Run(ctx)
	testcontainers.CleanupContainer(t, emu)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := emu.Client().Listeners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != len(originemu.Profiles) || len(emu.Listeners) != len(originemu.Profiles) {
		t.Fatalf("%d listeners running, %d known, want %d", len(infos), len(emu.Listeners), len(originemu.Profiles))
	}
	for i, p := range originemu.Profiles {
		l := emu.Listeners[string(p)]
		if l.Profile != string(p) || l.Port != emucontainer.FirstListenerPort+i || !strings.HasSuffix(infos[i].Addr, ":"+strconv.Itoa(l.Port)) {
			t.Errorf("listener %s: %+v, running at %s; want profile %s, port %d", p, l, infos[i].Addr, p, emucontainer.FirstListenerPort+i)
		}
	}
}
