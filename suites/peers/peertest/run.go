package peertest

// Running a real peer in a test: emulators on loopback, the peer's
// foreground process, requests through it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/testca"
	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Emulators starts the emulators with every fixed listener (not the
// default-port ones) and returns them with the neutral topology for them.
func Emulators(t testing.TB, prof topology.Profile) (*originemu.Emulator, *topology.Neutral) {
	t.Helper()
	var cfg originemu.Config
	for _, l := range topology.Listeners() {
		if l.DefaultPort == 0 {
			cfg.Listeners = append(cfg.Listeners, originemu.ListenerConfig{Name: l.Name, Profile: l.Profile})
		}
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	emu, err := originemu.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("starting the emulators: %v", err)
	}
	t.Cleanup(func() { emu.Close() })
	ports := map[string]int{}
	for _, li := range emu.Listeners() {
		_, p, err := net.SplitHostPort(li.Addr)
		if err != nil {
			t.Fatalf("listener %s: address %q: %v", li.Name, li.Addr, err)
		}
		ports[li.Name], _ = strconv.Atoi(p)
	}
	n, err := topology.BuildNeutral(peers.LoopbackParams(prof, ports))
	if err != nil {
		t.Fatalf("building the topology: %v", err)
	}
	return emu, n
}

// Binary returns the path of the first of names found on PATH (or in
// /usr/sbin, where Debian puts daemons), or skips the test naming the
// Debian package to install.
func Binary(t testing.TB, pkg string, names ...string) string {
	t.Helper()
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
		if p := "/usr/sbin/" + n; isExec(p) {
			return p
		}
	}
	t.Skipf("%s not installed: apt-get install -y %s", strings.Join(names, " or "), pkg)
	return ""
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// FreeAddr returns 127.0.0.1:PORT with a port that was free a moment ago
// (for peers that cannot bind port 0 themselves).
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Start runs cmd (a foreground process) in its own process group with its
// output in a file under dir, waits until addr accepts connections, and
// stops the group (SIGTERM, then SIGKILL) when the test ends. It fails
// the test, with the process's output, if the process exits first or addr
// does not accept within wait.
func Start(t testing.TB, dir string, cmd []string, env []string, addr string, wait time.Duration) {
	t.Helper()
	out, err := os.CreateTemp(dir, "peer-*.log")
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Dir, c.Stdout, c.Stderr = dir, out, out
	c.Env = append(os.Environ(), env...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatalf("starting %s: %v", cmd[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	t.Cleanup(func() {
		syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	deadline := time.Now().Add(wait)
	for {
		select {
		case err := <-done:
			done <- err
			t.Fatalf("%s exited before serving: %v\n%s", cmd[0], err, readLog(out.Name()))
		default:
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not accept on %s after %v\n%s", cmd[0], addr, wait, readLog(out.Name()))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readLog(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// Response is what a client got.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Get sends GET path to the peer at addr with the client host and returns
// the whole response.
func Get(ctx context.Context, addr, host, path string, header ...string) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET http://%s%s (Host %s): %w", addr, path, host, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("GET http://%s%s: reading the body: %w", addr, path, err)
	}
	return &Response{Status: res.StatusCode, Header: res.Header, Body: b}, nil
}

// CAFile writes the emulators' CA certificate (PEM) into dir and returns
// its path, for Env.OriginCA.
func CAFile(t testing.TB, emu *originemu.Emulator, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "origin-ca.pem")
	if err := os.WriteFile(p, emu.CAPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ReachableDir is a new temporary directory (removed when the test ends)
// that a peer dropping privileges can reach: mode 0755 under os.TempDir
// (t.TempDir's parent is 0700).
func ReachableDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "edgeconform-peertest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// GenerateWithCA is Generate with a real CA certificate as env.OriginCA
// (peers that load it at start-up or when checking their configuration)
// in a ReachableDir. It returns the file name's contents too.
func GenerateWithCA(t testing.TB, p peers.Peer, prof topology.Profile, file string) (*topology.Neutral, peers.Env, *peers.Setup, string) {
	t.Helper()
	topo := Topology(t, prof)
	dir := ReachableDir(t)
	ca, err := testca.New("edgeconform test")
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "origin-ca.pem")
	if err := os.WriteFile(caFile, ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	env := peers.Env{Dir: filepath.Join(dir, "peer"), Listen: "127.0.0.1:18999", Binary: p.Name(), Profile: prof.Name,
		OriginCA: caFile, Resolve: peers.LoopbackResolve()}
	if err := os.Mkdir(env.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	setup, err := p.Generate(topo, env)
	if err != nil {
		t.Fatalf("%s: generating: %v", p.Name(), err)
	}
	if err := setup.Check(topo, env); err != nil {
		t.Fatalf("%s: %v", p.Name(), err)
	}
	b, err := os.ReadFile(env.Path(file))
	if err != nil {
		t.Fatal(err)
	}
	return topo, env, setup, string(b)
}

// Running is a real peer started by Run.
type Running struct {
	Emu   *originemu.Emulator
	Topo  *topology.Neutral
	Env   peers.Env
	Setup *peers.Setup
}

// Run starts the emulators, generates p's configuration for them and
// starts the peer found at bin (stopped when the test ends), waiting up
// to startup for it to accept connections.
func Run(t testing.TB, p peers.Peer, bin string, prof topology.Profile, startup time.Duration) *Running {
	t.Helper()
	emu, topo := Emulators(t, prof)
	dir := ReachableDir(t)
	env := peers.Env{Dir: filepath.Join(dir, "peer"), Listen: FreeAddr(t), Binary: bin, Profile: prof.Name,
		OriginCA: CAFile(t, emu, dir), Resolve: peers.LoopbackResolve()}
	if err := os.Mkdir(env.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	setup, err := p.Generate(topo, env)
	if err != nil {
		t.Fatalf("%s: generating: %v", p.Name(), err)
	}
	Start(t, env.Dir, setup.Command, setup.Environ, env.Listen, startup)
	return &Running{Emu: emu, Topo: topo, Env: env, Setup: setup}
}

// LogRecord waits (up to 10 s) for the peer's log record of uri and
// returns it, or nil.
func (r *Running) LogRecord(uri string) map[string]any {
	if r.Setup.Logs == nil {
		return nil
	}
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(r.Setup.Logs.Path)
		for _, line := range strings.Split(string(b), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["uri"] == uri {
				return rec
			}
		}
	}
	return nil
}
