package bucketclients

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	akid   = "AKIDCLIENTS0000001"
	secret = "clients/secret+key/EXAMPLE000000000000000"
	region = "eu-west-1"
	bucket = "clients"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// originemuBinary builds the emulator once per test binary.
func originemuBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bucketclients-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "originemu")
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		out, err := exec.Command(gobin, "build", "-o", binPath, "github.com/edgeconform/edgeconform/emulators/cmd/originemu").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building originemu: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// emulator is an originemu process with an S3 and a Cloud Storage backend,
// both disk-backed.
type emulator struct {
	cmd     *exec.Cmd
	s3, gcs string // base URLs
	dir     string
}

func startEmulator(t *testing.T) *emulator {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`control: 127.0.0.1:0
listeners:
  - {name: s3, profile: http, addr: "127.0.0.1:0"}
  - {name: gcs, profile: http, addr: "127.0.0.1:0"}
backends:
  s3:
    s3:
      region: %s
      credentials: {%s: %q}
      dataDir: %s
      buckets: [{name: %s}]
  gcs:
    gcs:
      dataDir: %s
      buckets: [{name: %s, public: true}]
`, region, akid, secret, filepath.Join(dir, "s3"), bucket, filepath.Join(dir, "gcs"), bucket)
	cfgPath := filepath.Join(dir, "originemu.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(originemuBinary(t), "--config", cfgPath)
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &emulator{cmd: cmd, dir: dir}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("originemu stderr (last 4 KiB):\n%s", tail(stderr.String(), 4096))
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "s3":
			e.s3 = f[2]
		case len(f) == 3 && f[0] == "gcs":
			e.gcs = f[2]
		case len(f) == 2 && f[0] == "control":
			if e.s3 == "" || e.gcs == "" {
				t.Fatalf("originemu printed no s3/gcs listener")
			}
			go func() {
				for sc.Scan() {
				}
			}()
			return e
		}
	}
	t.Fatalf("originemu exited before it was ready: %s", stderr.String())
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// peakRSS is the emulator's peak resident set size (VmHWM) in bytes.
func (e *emulator) peakRSS(t *testing.T) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", e.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// client returns the path of a CLI, or skips (fails under
// EDGECONFORM_REQUIRE_CLIENTS=1) when it is not installed.
func client(t *testing.T, name, path, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(path)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s not installed (%s): apt-get install %s", name, path, pkg)
	if os.Getenv("EDGECONFORM_REQUIRE_CLIENTS") == "1" {
		t.Fatal(msg + " (EDGECONFORM_REQUIRE_CLIENTS=1)")
	}
	t.Skip(msg)
	return ""
}

// run runs a CLI with env (on top of a clean HOME) and returns its
// combined output, failing the test on a non-zero exit.
func run(t *testing.T, env []string, bin string, args ...string) string {
	t.Helper()
	out, err := runErr(t, env, bin, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, tail(out, 4096))
	}
	return out
}

func runErr(t *testing.T, env []string, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	home := t.TempDir()
	cmd.Env = append([]string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}, env...)
	cmd.Dir = home
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// writeTree writes files of the given sizes (random-ish content) under
// dir and returns their contents by relative name.
func writeTree(t *testing.T, dir string, sizes map[string]int) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, size := range sizes {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i*7 + len(name))
		}
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out[name] = data
	}
	return out
}

func sameFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes differ from the %d uploaded", path, len(got), len(want))
	}
}
