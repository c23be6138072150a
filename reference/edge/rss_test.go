package edge

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/synth"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// rssBudget is how much a 1 GiB object through a cold cache may raise the
// process's peak RSS (issue #4).
const rssBudget = 64 << 20

// RNG-2, memory: a 1 GiB object through a cold cache with the disk store
// raises the peak RSS by at most 64 MiB. The measurement runs in a child
// process (VmHWM is per process) and without the race detector, whose
// shadow memory would measure the detector; make test runs it that way.
func TestOneGiBColdFillPeakRSS(t *testing.T) {
	if raceEnabled {
		t.Skip("measures memory: runs without -race (make test runs it separately)")
	}
	if testing.Short() {
		t.Skip("moves 1 GiB twice over loopback")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestOneGiBChild$", "-test.v")
	cmd.Env = append(os.Environ(), "EDGE_RSS_CHILD="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var base, peak, bytes int64
	for _, line := range strings.Split(string(out), "\n") {
		if _, err := fmt.Sscanf(strings.TrimSpace(line), "rss base=%d peak=%d bytes=%d", &base, &peak, &bytes); err == nil {
			break
		}
	}
	if peak == 0 {
		t.Fatalf("child printed no measurement:\n%s", out)
	}
	t.Logf("1 GiB cold fill: peak RSS %d MiB over a base of %d MiB (%d bytes delivered)", (peak-base)>>20, base>>20, bytes)
	if peak-base > rssBudget {
		t.Fatalf("peak RSS rose by %d MiB, budget %d MiB", (peak-base)>>20, rssBudget>>20)
	}
}

// TestOneGiBChild is TestOneGiBColdFillPeakRSS's child process.
func TestOneGiBChild(t *testing.T) {
	dir := os.Getenv("EDGE_RSS_CHILD")
	if dir == "" {
		t.Skip("runs as the child of TestOneGiBColdFillPeakRSS")
	}
	emu, err := originemu.Start(context.Background(), originemu.Config{
		Listeners: []originemu.ListenerConfig{{Name: "http", Profile: originemu.HTTP}},
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	const path = "/o/gib"
	size := int64(1 << 30)
	if err := emu.PutObjects(objects.Spec{Path: path, Size: &size, CacheControl: "max-age=60"}); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(emu.Addr("http"))
	var buf bytes.Buffer
	template.Must(template.New("cfg").Funcs(template.FuncMap{"port": func(string) string { return port }}).Parse(cacheConfig)).Execute(&buf, nil)
	cfg, err := config.Load(buf.Bytes(), config.Options{Lab: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.NewDisk(dir, 2<<30)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	client := upstream.New(upstream.Options{Logger: log, Resolve: map[string]string{"origin.test": "127.0.0.1"}})
	defer client.Close()
	srv, err := New(cfg, client, log, nil, WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	runtime.GC()
	base := procStatus(t, "VmRSS")
	resp, err := http.Get(hs.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	obj := synth.Object{Path: path, Size: size, Version: "1"}
	var n int64
	p := make([]byte, 256<<10)
	for {
		m, err := resp.Body.Read(p)
		if m > 0 {
			if verr := synth.Verify(obj, n, p[:m]); verr != nil {
				t.Fatal(verr)
			}
			n += int64(m)
		}
		if err != nil {
			break
		}
	}
	if n != size {
		t.Fatalf("read %d bytes, want %d", n, size)
	}
	for deadline := time.Now().Add(10 * time.Second); srv.group.Stats().InFlight > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // the last chunk's fill commits after its last byte went out
	}
	if b := st.Stats().Bytes; b < size {
		t.Fatalf("the disk store holds %d bytes after the fill, want the whole object (%d)", b, size)
	}
	fmt.Printf("rss base=%d peak=%d bytes=%d\n", base, procStatus(t, "VmHWM"), n)
}

// procStatus reads a "kB" field of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
