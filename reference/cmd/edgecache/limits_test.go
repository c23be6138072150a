package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
)

// The receive limits' flags reach the server: a target over
// --max-url-bytes is 414 and more fields than --max-header-fields 431,
// from edgecache itself (issue #12 item 4); a request within them is served.
// Both HTTP/1.1 servers (--http1-server) do it.
func TestServeLimitFlags(t *testing.T) {
	for _, server := range []string{"h1serve", "net/http"} {
		t.Run(strings.ReplaceAll(server, "/", "-"), func(t *testing.T) { testServeLimitFlags(t, server) })
	}
}

func testServeLimitFlags(t *testing.T, server string) {
	emu, err := originemu.Start(context.Background(), originemu.Config{Logger: slog.New(slog.DiscardHandler), Listeners: []originemu.ListenerConfig{
		{Name: "refuse", Profile: originemu.Refuse}, {Name: "h2", Profile: originemu.H2}, {Name: "blackhole", Profile: originemu.Blackhole},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	caFile := writeFile(t, filepath.Join(t.TempDir(), "ca.pem"), string(emu.CAPEM()))
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config", demoConfig(t, emu), "--listen", "127.0.0.1:0",
			"--origin-ca", caFile, "--resolve", "origin.test=127.0.0.1",
			"--max-url-bytes", "1KiB", "--max-header-fields", "20", "--max-header-bytes", "4KiB", "--http1-server", server}, pw, io.Discard)
		pw.Close()
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening http://")
	if err != nil || !ok {
		t.Fatalf("first line %q: %v", line, err)
	}
	go io.Copy(io.Discard, pr)
	cases := []struct {
		name, path string
		fields     int
		size       int
		want       int
	}{
		{"within the limits", "/video/ok", 5, 10, 0},
		{"--max-url-bytes 1KiB", "/video/long?" + strings.Repeat("a", 1100), 0, 0, 414},
		{"--max-header-fields 20", "/video/fields", 25, 1, 431},
		{"--max-header-bytes 4KiB", "/video/bytes", 5, 1000, 431},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: media.example.com\r\n", c.path)
			for i := range c.fields {
				fmt.Fprintf(&b, "X-F%d: %s\r\n", i, strings.Repeat("v", c.size))
			}
			b.WriteString("Connection: close\r\n\r\n")
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(nc, b.String())
			resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			prefix, _, _ := strings.Cut(c.path, "?")
			n := len(emu.Journal().Query(journal.Query{PathPrefix: prefix}).Requests)
			if c.want == 0 {
				if resp.StatusCode >= 400 || n != 1 {
					t.Errorf("got %d, %d origin requests; want it served from the origin", resp.StatusCode, n)
				}
				return
			}
			if resp.StatusCode != c.want || n != 0 {
				t.Errorf("got %d, %d origin requests; want %d and none", resp.StatusCode, n, c.want)
			}
		})
	}
}

func TestServeLimitFlagsChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--max-url-bytes", "10"},
		{"--max-header-fields", "0"},
		{"--max-header-bytes", "20GiB"},
		{"--h2-max-resets", "-1"},
	} {
		_, err := parseServe(append([]string{"--config", "x.yaml", "--listen", "127.0.0.1:0"}, args...))
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "request limits") {
			t.Errorf("%v: got %v, want a usage error about the request limits", args, err)
		}
	}
}

// --http1-server takes h1serve or net/http only.
func TestServeHTTP1ServerFlagChecked(t *testing.T) {
	_, err := parseServe([]string{"--config", "x.yaml", "--listen", "127.0.0.1:0", "--http1-server", "fasthttp"})
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `--http1-server "fasthttp"`) {
		t.Errorf("got %v, want a usage error naming --http1-server", err)
	}
}

// The configuration bounds' flags (issue #12 item 10): the demo's failover
// chain (primary -> backup) is 2 origins, over --max-failover-chain 1.
func TestValidateBoundFlags(t *testing.T) {
	file := repoFile(t, "fixtures/edgecache-demo.yaml")
	var out strings.Builder
	if err := run(context.Background(), []string{"validate", "--config", file, "--max-failover-chain", "2"}, &out, io.Discard); err != nil {
		t.Fatalf("--max-failover-chain 2: %v", err)
	}
	err := run(context.Background(), []string{"validate", "--config", file, "--max-failover-chain", "1"}, &out, io.Discard)
	var ie *invalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "failover chain primary -> backup has 2 origins, more than 1") {
		t.Errorf("--max-failover-chain 1: got %v, want the chain reported", err)
	}
	for _, args := range [][]string{{"--max-hosts", "0"}, {"--max-route-rules", "-3"}} {
		err := run(context.Background(), append([]string{"validate", "--config", file}, args...), &out, io.Discard)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
}
