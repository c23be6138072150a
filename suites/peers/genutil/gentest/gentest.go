// Package gentest runs a real peer on its generated configuration for a
// generator's test: emulator listeners on loopback, the loopback topology
// with their ports (made-up ports for the others), the peer started in
// the foreground in a temporary directory, ready once a plain route
// answers, stopped (and its logs shown on failure) at the end.
package gentest

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Live is a running peer and its emulator.
type Live struct {
	Emu    *originemu.Emulator
	Topo   *topology.Neutral
	Env    peers.Env
	Setup  *peers.Setup
	Ctx    context.Context
	client *http.Client
}

// Binary returns the first of p's binaries found, or skips the test.
func Binary(t *testing.T, p peers.Peer) string {
	t.Helper()
	for _, b := range p.Binaries() {
		if path, err := exec.LookPath(b); err == nil {
			return path
		}
	}
	t.Skipf("%s is not installed (apt-get install -y %s): skipping the run against the real peer", p.Name(), p.Package())
	return ""
}

// Start runs the emulator with listeners, generates p's configuration
// for the strict loopback topology and starts p; logs are files inside
// the peer's directory shown when the test fails.
func Start(t *testing.T, p peers.Peer, listeners map[string]originemu.Profile, logs ...string) *Live {
	t.Helper()
	bin := Binary(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	var ls []originemu.ListenerConfig
	for n, prof := range listeners {
		ls = append(ls, originemu.ListenerConfig{Name: n, Profile: prof})
	}
	emu, err := originemu.Start(ctx, originemu.Config{Listeners: ls})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	ports := map[string]int{}
	for i, l := range topology.Listeners() {
		if l.DefaultPort == 0 {
			ports[l.Name] = 20000 + i
		}
	}
	for n := range listeners {
		_, port, _ := net.SplitHostPort(emu.Addr(n))
		ports[n], _ = strconv.Atoi(port)
	}
	topo, err := topology.BuildNeutral(peers.LoopbackParams(topology.Strict, ports))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := filepath.Join(dir, "origin-ca.pem")
	if err := os.WriteFile(ca, emu.CAPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	env := peers.Env{Dir: dir, Listen: freeAddr(t), Binary: bin, Profile: topology.Strict.Name, OriginCA: ca, Resolve: peers.LoopbackResolve()}
	setup, err := p.Generate(topo, env)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(setup.Command[0], setup.Command[1:]...)
	cmd.Env = append(os.Environ(), setup.Environ...)
	out, err := os.Create(filepath.Join(dir, "stdout-stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", p.Name(), err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		out.Close()
		if t.Failed() {
			for _, f := range append([]string{"stdout-stderr.log"}, logs...) {
				b, _ := os.ReadFile(filepath.Join(dir, f))
				t.Logf("%s %s:\n%s", p.Name(), f, b)
			}
		}
	})
	l := &Live{Emu: emu, Topo: topo, Env: env, Setup: setup, Ctx: ctx, client: &http.Client{}}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if st, _ := l.Do(t, "GET", "/c/plain/ready"); st == http.StatusOK {
			return l
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s exited before answering: %v", p.Name(), err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within 30 s", p.Name())
		}
	}
}

// Do sends a request with the client Host to path and returns the status
// (0 if the request failed) and headers; the body is read and dropped.
func (l *Live) Do(t *testing.T, method, path string) (int, http.Header) {
	t.Helper()
	return l.DoHost(t, method, l.Topo.ClientHost, path)
}

// DoHost is Do with another Host.
func (l *Live) DoHost(t *testing.T, method, host, path string) (int, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(l.Ctx, method, "http://"+l.Env.Listen+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
