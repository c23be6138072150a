package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWorkersReachBothProxies: -workers N is nginx's worker_processes and
// the GOMAXPROCS a started Go server sees in its environment.
func TestWorkersReachBothProxies(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		s := settings{workers: n}
		conf := proxyConf(t.TempDir(), 8080, 8081, s.workers, true)
		if want := "\nworker_processes " + strconv.Itoa(n) + ";\n"; !strings.Contains(conf, want) {
			t.Errorf("-workers %d: proxy config lacks %q:\n%s", n, strings.TrimSpace(want), conf)
		}

		// A child started as the Go servers are reports its GOMAXPROCS.
		dir := t.TempDir()
		p := &proc{name: "env child", env: goEnv(s)}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := p.start(ctx, filepath.Join(dir, "child.out"), "/bin/sh", "-c", `echo "GOMAXPROCS=$GOMAXPROCS" >&2`); err != nil {
			cancel()
			t.Fatal(err)
		}
		err := p.cmd.Wait()
		cancel()
		if err != nil {
			t.Fatalf("-workers %d: the child failed: %v", n, err)
		}
		out, err := os.ReadFile(filepath.Join(dir, "child.out"))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(string(out)), "GOMAXPROCS="+strconv.Itoa(n); got != want {
			t.Errorf("-workers %d: the child saw %q, want %q", n, got, want)
		}
	}
}
