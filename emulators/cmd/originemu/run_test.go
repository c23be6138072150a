package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/originemu"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func listenerSummary(ls []originemu.ListenerConfig) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Name+"="+string(l.Profile)+"@"+l.Addr)
	}
	return out
}

func TestParseArgs(t *testing.T) {
	yamlConfig := writeFile(t, "c.yaml", `
control: 127.0.0.1:9100
journalCapacity: 50
listeners:
  - name: a
    profile: http
    addr: 127.0.0.1:8001
  - name: b
    profile: h2
    shaping: {bandwidth: 102400, latency: 50ms}
  - name: p
    profile: http
    proxy: {url: "http://127.0.0.1:8080", host: media.example}
maxRules: 20
rules:
  - match: {path: /x}
    times: 2
    action: {status: 503, delay: 10ms}
objects:
  - path: /o
    body: hi
`)
	jsonConfig := writeFile(t, "c.json", `{"listeners":[{"name":"j","profile":"h2c"}]}`)
	var defaults []string
	for i, p := range []string{"http", "h2c", "https", "h2", "tls-expired", "tls-wrong-name", "tls-untrusted", "refuse", "blackhole", "syn-drop"} {
		defaults = append(defaults, fmt.Sprintf("%s=%s@127.0.0.1:%d", p, p, 18080+i))
	}
	tests := []struct {
		name      string
		args      []string
		listeners []string
		control   string
		check     func(t *testing.T, s *setup)
	}{
		{name: "nothing: the default set", args: nil, listeners: defaults, control: "127.0.0.1:18000"},
		{name: "one listener", args: []string{"--listen", "web=http@127.0.0.1:8080"},
			listeners: []string{"web=http@127.0.0.1:8080"}, control: "127.0.0.1:9000"},
		{name: "address optional", args: []string{"-listen", "web=http", "--listen=tls=h2@[::1]:0"},
			listeners: []string{"web=http@127.0.0.1:0", "tls=h2@[::1]:0"}, control: "127.0.0.1:9000"},
		{name: "defaults and more", args: []string{"--defaults", "--listen", "x=h2c", "--control", "127.0.0.1:0"},
			listeners: append(slices.Clone(defaults), "x=h2c@127.0.0.1:0"), control: "127.0.0.1:0"},
		{name: "yaml config", args: []string{"--config", yamlConfig},
			listeners: []string{"a=http@127.0.0.1:8001", "b=h2@", "p=http@"}, control: "127.0.0.1:9100",
			check: func(t *testing.T, s *setup) {
				if sh := s.cfg.Listeners[1].Shaping; sh == nil || sh.Bandwidth != 102400 || sh.Latency.D() != 50*time.Millisecond {
					t.Errorf("shaping read as %+v", sh)
				}
				if px := s.cfg.Listeners[2].Proxy; px == nil || px.URL != "http://127.0.0.1:8080" || px.Host != "media.example" || s.cfg.MaxRules != 20 {
					t.Errorf("proxy read as %+v, maxRules %d", px, s.cfg.MaxRules)
				}
				if s.cfg.JournalCapacity != 50 || len(s.cfg.Rules) != 1 || s.cfg.Rules[0].Times != 2 ||
					s.cfg.Rules[0].Action.Delay.D() != 10*time.Millisecond || len(s.cfg.Objects) != 1 || *s.cfg.Objects[0].Body != "hi" {
					t.Errorf("config read as %+v", s.cfg)
				}
			}},
		{name: "flags add to and override the config", args: []string{"--config", yamlConfig, "--listen", "c=https", "--control", "127.0.0.1:9200", "--journal-cap", "7"},
			listeners: []string{"a=http@127.0.0.1:8001", "b=h2@", "p=http@", "c=https@127.0.0.1:0"}, control: "127.0.0.1:9200",
			check: func(t *testing.T, s *setup) {
				if s.cfg.JournalCapacity != 7 {
					t.Errorf("journal capacity %d, want 7", s.cfg.JournalCapacity)
				}
			}},
		{name: "json config", args: []string{"--config", jsonConfig}, listeners: []string{"j=h2c@"}, control: "127.0.0.1:9000"},
		{name: "cert and key", args: []string{"--listen", "s=https", "--cert", "c.pem", "--key", "k.pem", "--ca-out", "ca.pem", "--log-format", "json", "--log-level", "debug"},
			listeners: []string{"s=https@127.0.0.1:0"}, control: "127.0.0.1:9000",
			check: func(t *testing.T, s *setup) {
				if s.cfg.CertFile != "c.pem" || s.cfg.KeyFile != "k.pem" || s.caOut != "ca.pem" || s.logFormat != "json" || s.logLevel.String() != "DEBUG" {
					t.Errorf("setup %+v", s)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := parseArgs(tt.args, io.Discard)
			if err != nil {
				t.Fatalf("parseArgs(%q): %v", tt.args, err)
			}
			if got := listenerSummary(s.cfg.Listeners); !slices.Equal(got, tt.listeners) {
				t.Errorf("listeners %v, want %v", got, tt.listeners)
			}
			if s.control != tt.control {
				t.Errorf("control %q, want %q", s.control, tt.control)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

func TestParseArgsErrors(t *testing.T) {
	unknownField := writeFile(t, "bad.yaml", "listeners:\n  - name: a\n    profile: http\n    adress: 127.0.0.1:1\n")
	unknownTop := writeFile(t, "bad2.yaml", "listenrs: []\n")
	badRule := writeFile(t, "bad3.yaml", "rules:\n  - action: {delay: soon}\n")
	badControl := writeFile(t, "bad4.yaml", "control: nowhere\n")
	notYAML := writeFile(t, "bad5.yaml", "listeners: [\n")
	tests := []struct {
		name string
		args []string
		want []string // each must be in the message
	}{
		{"listen without profile", []string{"--listen", "web"}, []string{"-listen", "NAME=PROFILE"}},
		{"listen without name", []string{"--listen", "=http"}, []string{"-listen", "NAME=PROFILE"}},
		{"unknown profile", []string{"--listen", "web=htp"}, []string{"-listen", `unknown profile "htp"`, "h2c"}},
		{"bad listen address", []string{"--listen", "web=http@localhost"}, []string{"-listen", `"localhost"`}},
		{"bad listen port", []string{"--listen", "web=http@127.0.0.1:http"}, []string{"-listen", `port "http"`}},
		{"bad control", []string{"--control", "9000"}, []string{"--control", `"9000"`}},
		{"cert without key", []string{"--cert", "c.pem"}, []string{"--cert and --key"}},
		{"key without cert", []string{"--key", "k.pem"}, []string{"--cert and --key"}},
		{"negative journal cap", []string{"--journal-cap", "-1"}, []string{"--journal-cap", "-1"}},
		{"journal cap not a number", []string{"--journal-cap", "many"}, []string{"-journal-cap", `"many"`}},
		{"log format", []string{"--log-format", "xml"}, []string{"--log-format", `"xml"`}},
		{"log level", []string{"--log-level", "loud"}, []string{"--log-level", `"loud"`}},
		{"unknown flag", []string{"--frobnicate"}, []string{"frobnicate"}},
		{"positional argument", []string{"serve"}, []string{`"serve"`}},
		{"missing config", []string{"--config", "/nonexistent/x.yaml"}, []string{"--config", "/nonexistent/x.yaml"}},
		{"unknown listener field", []string{"--config", unknownField}, []string{"--config", "listeners[0].adress", `unknown field "adress"`}},
		{"unknown top-level field", []string{"--config", unknownTop}, []string{"--config", `unknown field "listenrs"`}},
		{"bad duration in config", []string{"--config", badRule}, []string{"--config", "rules[0].action.delay", `"soon"`}},
		{"bad control in config", []string{"--config", badControl}, []string{"control", `"nowhere"`}},
		{"malformed config", []string{"--config", notYAML}, []string{"--config", "bad5.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseArgs(tt.args, io.Discard)
			if err == nil {
				t.Fatalf("parseArgs(%q) succeeded", tt.args)
			}
			if _, ok := errors.AsType[*usageError](err); !ok {
				t.Errorf("error %v is not a usage error (exit status 2)", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	dup := writeFile(t, "dup.yaml", "listeners:\n  - {name: a, profile: http}\n  - {name: a, profile: h2c}\n")
	err := run(t.Context(), []string{"--config", dup, "--control", "127.0.0.1:0"}, io.Discard, io.Discard)
	if _, ok := errors.AsType[*usageError](err); !ok || !strings.Contains(err.Error(), "listeners[1].name") {
		t.Errorf("run with a duplicate listener name: %v, want a usage error naming listeners[1].name", err)
	}
	err = run(t.Context(), []string{"--listen", "s=https", "--cert", "/nonexistent.pem", "--key", "/nonexistent.key", "--control", "127.0.0.1:0"}, io.Discard, io.Discard)
	if _, ok := errors.AsType[*usageError](err); !ok || !strings.Contains(err.Error(), "certFile") {
		t.Errorf("run with a missing certificate: %v, want a usage error naming certFile", err)
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		err    error
		code   int
		stderr string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{usagef("--control: bad"), 2, "originemu: --control: bad\n(run originemu -h for usage)\n"},
		{errors.New("listening: address in use"), 1, "originemu: listening: address in use\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		if got := exitCode(tt.err, &b); got != tt.code || b.String() != tt.stderr {
			t.Errorf("exitCode(%v) = %d, %q; want %d, %q", tt.err, got, b.String(), tt.code, tt.stderr)
		}
	}
}

func TestHelp(t *testing.T) {
	var out strings.Builder
	err := run(t.Context(), []string{"-h"}, &out, io.Discard)
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-listen NAME=PROFILE[@ADDR]") {
		t.Errorf("-h: %v, usage %q", err, out.String())
	}
}

// TestRunInProcess starts run on free ports, reads what it prints, checks
// the control API answers, and stops it by ending its context.
func TestRunInProcess(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	caOut := filepath.Join(t.TempDir(), "ca.pem")
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"--listen", "web=http", "--listen", "h=h2c@127.0.0.1:0", "--control", "127.0.0.1:0", "--ca-out", caOut, "--log-level", "warn"}, pw, io.Discard)
		pw.CloseWithError(err)
		done <- err
	}()
	lines := readUntilControl(t, pr)
	go io.Copy(io.Discard, pr)
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "web http http://127.0.0.1:") || !strings.HasPrefix(lines[1], "h h2c http://127.0.0.1:") {
		t.Fatalf("printed %q", lines)
	}
	controlURL := strings.TrimPrefix(lines[2], "control ")
	resp, err := http.Get(controlURL + "/v1/health")
	if err != nil {
		t.Fatalf("control API: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("health: %d", resp.StatusCode)
	}
	if b, err := os.ReadFile(caOut); err != nil || !strings.Contains(string(b), "BEGIN CERTIFICATE") {
		t.Errorf("--ca-out file: %q, %v", b, err)
	}

	// A long poll in flight does not hold up the shutdown: it is answered.
	waitStatus := make(chan int, 1)
	go func() {
		resp, err := http.Get(controlURL + "/v1/journal/wait?n=100&timeout=5m")
		if err != nil {
			waitStatus <- 0
			return
		}
		resp.Body.Close()
		waitStatus <- resp.StatusCode
	}()
	time.Sleep(100 * time.Millisecond) // let the poll start
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	if d := time.Since(start); d >= shutdownTimeout {
		t.Errorf("shutdown took %s: the long poll held it up", d)
	}
	if st := <-waitStatus; st != http.StatusServiceUnavailable {
		t.Errorf("the long poll in flight at shutdown got %d, want 503", st)
	}
}

// readUntilControl reads stdout lines up to and including "control URL".
func readUntilControl(t *testing.T, r io.Reader) []string {
	t.Helper()
	type result struct {
		lines []string
		err   error
	}
	ch := make(chan result, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.HasPrefix(sc.Text(), "control ") {
				ch <- result{lines: lines}
				return
			}
		}
		ch <- result{lines: lines, err: errors.Join(sc.Err(), io.ErrUnexpectedEOF)}
	}()
	select {
	case res := <-ch:
		if res.err != nil {
			t.Fatalf("reading stdout: %v after %q", res.err, res.lines)
		}
		return res.lines
	case <-time.After(20 * time.Second):
		t.Fatal("no control line on stdout within 20s")
	}
	return nil
}
