package peers_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/suites/peers"
)

// A peer process: started in its own process group, healthy once it
// answers, stopped with SIGTERM; its output is kept in its log.
func TestPeerProcess(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to stand in for a peer's HTTP server")
	}
	dir := t.TempDir()
	addr, err := peers.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(addr, ":")
	setup := &peers.Setup{Command: []string{py, "-m", "http.server", port, "--bind", host}, Health: "/"}
	logPath := filepath.Join(dir, "peer.log")
	p, err := peers.StartPeer(setup, dir, logPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.WaitHealthy(ctx, "http://"+addr+"/", "edge.test", 20*time.Second); err != nil {
		p.Stop(time.Second)
		t.Fatal(err)
	}
	pid := p.Pid()
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the peer (pid %d) still runs after Stop: %v", pid, err)
	}
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "GET / ") {
		t.Fatalf("the peer's log lacks the health check:\n%s", b)
	}
}

// A peer that exits before answering is reported as such, with no wait
// for the whole timeout.
func TestPeerExitsEarly(t *testing.T) {
	dir := t.TempDir()
	p, err := peers.StartPeer(&peers.Setup{Command: []string{"/bin/sh", "-c", "echo bad configuration >&2; exit 3"}, Health: "/"}, dir, filepath.Join(dir, "peer.log"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = p.WaitHealthy(context.Background(), "http://127.0.0.1:1/", "edge.test", 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "exited") || time.Since(start) > 10*time.Second {
		t.Fatalf("got %v after %v", err, time.Since(start))
	}
	p.Stop(time.Second)
}

// A missing peer is not installed without permission: the error names the
// command to run.
func TestFindBinaryNotInstalled(t *testing.T) {
	_, err := peers.FindBinary(context.Background(), missing{}, false, slog.New(slog.DiscardHandler))
	if !errors.Is(err, peers.ErrNotInstalled) || !strings.Contains(err.Error(), "apt-get install -y --no-install-recommends edgeconform-no-such-package") {
		t.Fatalf("got %v", err)
	}
}

type missing struct{ fake }

func (missing) Package() string    { return "edgeconform-no-such-package" }
func (missing) Binaries() []string { return []string{"edgeconform-no-such-binary"} }
