package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/edgeconform/edgeconform/emulators/emuclient"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

// buildBinary builds the originemu command into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "originemu")
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.CommandContext(t.Context(), goCmd, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// syncBuffer collects a process's stderr.
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

// TestEndToEnd builds the command and drives it as a user would.
func TestEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	t.Run("script over the API, h2, SIGTERM", func(t *testing.T) { scriptAndStop(t, bin) })
	t.Run("bad flag", func(t *testing.T) { badFlag(t, bin) })
}

func scriptAndStop(t *testing.T, bin string) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	caOut := filepath.Join(t.TempDir(), "ca.pem")
	cmd := exec.Command(bin, "--listen", "web=http@127.0.0.1:0", "--listen", "tls=h2@127.0.0.1:0",
		"--control", "127.0.0.1:0", "--ca-out", caOut)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	// Wait only closes stdout once the process has exited, after the
	// reads below.
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	gone := false
	t.Cleanup(func() {
		if !gone {
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("originemu stderr:\n%s", stderr.String())
		}
	})

	// "NAME PROFILE URL" lines, then "control URL".
	lines := readUntilControl(t, stdout)
	go io.Copy(io.Discard, stdout)
	urls := map[string]string{}
	for _, l := range lines[:len(lines)-1] {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("listener line %q is not NAME PROFILE URL", l)
		}
		urls[f[0]+" "+f[1]] = f[2]
	}
	webURL, tlsURL := urls["web http"], urls["tls h2"]
	if len(urls) != 2 || !strings.HasPrefix(webURL, "http://127.0.0.1:") || !strings.HasPrefix(tlsURL, "https://127.0.0.1:") {
		t.Fatalf("listener lines %q", lines)
	}
	controlURL := strings.TrimPrefix(lines[len(lines)-1], "control ")
	c := emuclient.New(controlURL)
	if err := c.Health(ctx); err != nil {
		t.Fatalf("control API at %s: %v", controlURL, err)
	}

	// Script: the first two requests fail.
	stored, err := c.AddRules(ctx, rules.Rule{Match: rules.Match{Listener: "web", Path: "/e2e"}, Times: 2, Action: rules.Action{Status: 503}})
	if err != nil {
		t.Fatalf("AddRules: %v", err)
	}
	id := stored[0].ID
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var statuses []int
	for range 3 {
		resp, err := hc.Get(webURL + "/e2e")
		if err != nil {
			t.Fatalf("GET %s/e2e: %v", webURL, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	if !slices.Equal(statuses, []int{503, 503, 200}) {
		t.Fatalf("statuses %v, want [503 503 200]", statuses)
	}
	reqs, err := c.WaitEnded(ctx, journal.Query{Listener: "web"}, 3)
	if err != nil {
		t.Fatalf("WaitEnded: %v", err)
	}
	snap, err := c.Journal(ctx, journal.Query{Listener: "web", PathPrefix: "/e2e"})
	if err != nil {
		t.Fatalf("Journal: %v", err)
	}
	if len(reqs) != 3 || len(snap.Requests) != 3 {
		t.Fatalf("journal has %d (waited %d) requests, want 3", len(snap.Requests), len(reqs))
	}
	for i, want := range []string{id, id, ""} {
		if r := snap.Requests[i]; r.Rule != want || r.Status != statuses[i] {
			t.Errorf("request %d: rule %q status %d, want rule %q status %d", i, r.Rule, r.Status, want, statuses[i])
		}
	}

	// h2 over TLS, trusting the CA fetched over the API.
	caPEM, err := c.CAPEM(ctx)
	if err != nil {
		t.Fatalf("CAPEM: %v", err)
	}
	if written, err := os.ReadFile(caOut); err != nil || !bytes.Equal(written, caPEM) {
		t.Errorf("--ca-out wrote %q (%v), want the CA the API serves", written, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("CA PEM %q holds no certificate", caPEM)
	}
	const sni = "origin.e2e.test"
	h2t := &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: sni}}
	defer h2t.CloseIdleConnections()
	resp, err := (&http.Client{Transport: h2t, Timeout: 10 * time.Second}).Get(tlsURL + "/secure")
	if err != nil {
		t.Fatalf("h2 GET %s/secure: %v", tlsURL, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
		t.Errorf("h2 answer: %d over %s, want 200 over HTTP/2", resp.StatusCode, resp.Proto)
	}
	if _, err := c.WaitEnded(ctx, journal.Query{Listener: "tls"}, 1); err != nil {
		t.Fatalf("WaitEnded on tls: %v", err)
	}
	snap, err = c.Journal(ctx, journal.Query{Listener: "tls"})
	if err != nil {
		t.Fatalf("Journal of tls: %v", err)
	}
	if len(snap.Conns) != 1 || snap.Conns[0].ALPN != "h2" || snap.Conns[0].SNI != sni {
		t.Errorf("tls connections %+v, want one with ALPN h2 and SNI %s", snap.Conns, sni)
	}
	if len(snap.Requests) != 1 || snap.Requests[0].Proto != "HTTP/2.0" || snap.Requests[0].Path != "/secure" {
		t.Errorf("tls requests %+v, want one HTTP/2.0 request for /secure", snap.Requests)
	}

	// A clean exit on SIGTERM.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case err := <-exited:
		gone = true
		if err != nil {
			t.Fatalf("originemu exited with %v after SIGTERM, want status 0", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("originemu did not exit within 5s of SIGTERM")
	}
	if !strings.Contains(stderr.String(), "originemu stopped") {
		t.Errorf("stderr does not log the shutdown:\n%s", stderr.String())
	}
}

func badFlag(t *testing.T, bin string) {
	cmd := exec.CommandContext(t.Context(), bin, "--listen", "web=htp")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	ee, ok := errors.AsType[*exec.ExitError](err)
	if !ok || ee.ExitCode() != 2 {
		t.Fatalf("bad flag: %v, want exit status 2", err)
	}
	if !strings.Contains(stderr.String(), "-listen") || !strings.Contains(stderr.String(), `"htp"`) {
		t.Errorf("stderr %q does not name the flag and the bad profile", stderr.String())
	}
}
