package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "edgecache")
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building edgecache: %v\n%s", err, out)
	}
	return bin
}

func repoFile(t *testing.T, rel string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", rel)
}

// demoConfig is fixtures/edgecache-demo.yaml with the default originemu
// ports replaced by this test's emulator's ports.
func demoConfig(t *testing.T, emu *originemu.Emulator) string {
	b, err := os.ReadFile(repoFile(t, "fixtures/edgecache-demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for def, name := range map[string]string{"18087": "refuse", "18083": "h2", "18088": "blackhole"} {
		_, port, _ := net.SplitHostPort(emu.Addr(name))
		s = strings.ReplaceAll(s, "port: "+def, "port: "+port)
	}
	path := filepath.Join(t.TempDir(), "edgecache.yaml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestServeEndToEnd(t *testing.T) {
	bin := buildBinary(t)
	emu, err := originemu.Start(context.Background(), originemu.Config{Logger: slog.New(slog.DiscardHandler), Listeners: []originemu.ListenerConfig{
		{Name: "refuse", Profile: originemu.Refuse}, {Name: "h2", Profile: originemu.H2}, {Name: "blackhole", Profile: originemu.Blackhole},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, emu.CAPEM(), 0o644)

	cmd := exec.Command(bin, "serve", "--config", demoConfig(t, emu), "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0",
		"--origin-ca", caFile, "--resolve", "origin.test=127.0.0.1")
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	urls := map[string]string{}
	for len(urls) < 2 && sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		urls[k] = v
	}
	edge, admin := urls["listening"], urls["admin"]
	if edge == "" || admin == "" {
		t.Fatalf("no URLs printed: %v\n%s", urls, stderr.String())
	}
	get := func(url string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = "media.example.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	// Failover: the primary refuses, the h2 backup answers; Host and SNI
	// are the client's Host (HST-1, HST-2, HST-3).
	if resp, _ := get(edge + "/video/seg.ts"); resp.StatusCode != 200 {
		t.Fatalf("failover: %d", resp.StatusCode)
	}
	snap := emu.Journal().Query(journal.Query{PathPrefix: "/video/"})
	if len(snap.Requests) != 1 || snap.Requests[0].Listener != "h2" || snap.Requests[0].Host != "media.example.com" || len(snap.Conns) != 1 || snap.Conns[0].SNI != "media.example.com" {
		t.Fatalf("journal: %+v", snap)
	}
	// 504: two attempts at a blackhole, cut at maxAttemptsTimeout 1.5s.
	start := time.Now()
	if resp, _ := get(edge + "/stuck/x"); resp.StatusCode != 504 {
		t.Fatalf("stuck: %d", resp.StatusCode)
	}
	if el := time.Since(start); el < 1500*time.Millisecond || el > 3*time.Second {
		t.Fatalf("504 after %v, want about 1.5s", el)
	}
	if _, body := get(admin + "/healthz"); strings.TrimSpace(body) != "ok" {
		t.Fatalf("healthz: %q", body)
	}
	// The execution trace (go tool trace) starts with its format's magic.
	if resp, body := get(admin + "/debug/pprof/trace?seconds=0.05"); resp.StatusCode != 200 || !strings.HasPrefix(body, "go 1.") {
		t.Fatalf("trace: %d %.40q", resp.StatusCode, body)
	}
	_, metrics := get(admin + "/metrics")
	for _, want := range []string{`edgecache_origin_attempts_total{origin="primary",outcome="connect_failure"} 1`, `edgecache_requests_total{status="504"} 1`,
		`edgecache_cache_responses_total{cache_status="miss"}`, "edgecache_fills_total ", "edgecache_store_bytes "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// SIGTERM with a request in flight: it finishes, then a clean exit.
	if _, err := emu.AddRules(rules.Rule{Match: rules.Match{Path: "/inflight"}, Action: rules.Action{Delay: rules.Duration(500 * time.Millisecond)}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() {
		resp, err := http.Get(edge + "/inflight")
		if err != nil {
			done <- -1
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := emu.Journal().WaitRequests(ctx, journal.Query{PathPrefix: "/inflight"}, 1); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if code := <-done; code != 200 {
		t.Fatalf("in-flight request ended with %d during shutdown", code)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("edgecache did not exit after SIGTERM")
	}
	// One JSON record per client request and per attempt, linked.
	if !strings.Contains(stderr.String(), `"msg":"client request"`) || !strings.Contains(stderr.String(), `"msg":"origin attempt"`) {
		t.Fatalf("logs lack client/attempt records:\n%.2000s", stderr.String())
	}
}

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`
origins:
  - {name: a, originAddress: a.test, maxAttempts: 9, timeout: {connectTimeout: 0.2s}}
service:
  name: s
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: m}]
    pathMatchers: [{name: m, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: nope}]}]
`), 0o644)
	for _, tc := range []struct {
		args     []string
		code     int
		contains []string
	}{
		{[]string{"validate", "--config", repoFile(t, "fixtures/edgecache-demo.yaml")}, 0, []string{"valid"}},
		{[]string{"validate", "--config", bad}, 1, []string{"origins[0].maxAttempts", "origins[0].timeout.connectTimeout", "routeRules[0].origin"}},
		{[]string{"validate", "--config", bad, "--lab"}, 1, []string{"origins[0].maxAttempts"}},
		{[]string{"validate"}, 2, []string{"--config"}},
		{[]string{"serve", "--config", bad}, 2, []string{"--listen"}},
		{[]string{"frobnicate"}, 2, []string{"unknown command"}},
		{[]string{"serve", "--config", repoFile(t, "fixtures/edgecache-demo.yaml"), "--listen", "127.0.0.1:0", "--resolve", "nope"}, 2, []string{"--resolve"}},
	} {
		var out, errOut strings.Builder
		code := exitCode(run(context.Background(), tc.args, &out, &errOut), &errOut)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s%s)", tc.args, code, tc.code, out.String(), errOut.String())
		}
		for _, c := range tc.contains {
			if !strings.Contains(out.String()+errOut.String(), c) {
				t.Errorf("%v: output lacks %q:\n%s%s", tc.args, c, out.String(), errOut.String())
			}
		}
	}
}
