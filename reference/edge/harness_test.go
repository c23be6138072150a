package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/logjson"
	"github.com/edgeconform/edgeconform/reference/logsink"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// rig is an edge in front of one emulator with a listener per profile.
type rig struct {
	t       testing.TB
	emu     *originemu.Emulator
	edge    *httptest.Server
	logs    *syncBuffer
	metrics *Metrics
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// records returns the JSON log records with the given message.
func (s *syncBuffer) records(msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(s.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// newRig starts the emulator, renders the config template with the
// listeners' ports ({{port "h2"}}) and starts the edge on it (lab mode),
// with opts.
func newRig(t testing.TB, cfgTemplate string, opts ...Option) *rig {
	t.Helper()
	logs := &syncBuffer{}
	r := newRigLogging(t, cfgTemplate, logs, opts...)
	r.logs = logs
	return r
}

// newBenchRig is newRig with the log as edgecache serve writes it: JSON
// lines through an asynchronous logsink, here to io.Discard. A benchmark
// measures what a request costs in production, not an in-memory log that
// grows with b.N (which added about 1.6 KB per request to
// BenchmarkProxy's B/op); r.logs is nil.
func newBenchRig(b *testing.B, cfgTemplate string, opts ...Option) *rig {
	b.Helper()
	sink := logsink.New(io.Discard, logsink.Options{})
	b.Cleanup(func() { sink.Close() }) // after the edge's cleanups: last-in first-out
	return newRigLogging(b, cfgTemplate, sink, opts...)
}

func newRigLogging(t testing.TB, cfgTemplate string, logTo io.Writer, opts ...Option) *rig {
	t.Helper()
	return newRigLevel(t, cfgTemplate, logTo, slog.LevelInfo, opts...)
}

// newRigLevel is newRigLogging with the log's level.
func newRigLevel(t testing.TB, cfgTemplate string, logTo io.Writer, level slog.Level, opts ...Option) *rig {
	t.Helper()
	var ecfg originemu.Config
	for _, p := range originemu.Profiles {
		ecfg.Listeners = append(ecfg.Listeners, originemu.ListenerConfig{Name: string(p), Profile: p})
	}
	ecfg.Logger = slog.New(slog.DiscardHandler)
	emu, err := originemu.Start(context.Background(), ecfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	cfg := rigConfig(t, emu, cfgTemplate)
	log := slog.New(logjson.New(logTo, &slog.HandlerOptions{Level: level})) // the JSON lines edgecache serve writes
	client := upstream.New(upstream.Options{RootCAs: emu.CA().Pool(), Logger: log, Resolve: map[string]string{
		"primary.test": "127.0.0.1", "backup.test": "127.0.0.1", "origin.test": "127.0.0.1", "other.test": "127.0.0.1",
	}})
	t.Cleanup(client.Close)
	metrics := NewMetrics()
	srv, err := New(cfg, client, log, metrics, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close) // runs after edge.Close: cleanups run last-in first-out
	edge := serveH1(t, srv, log)
	return &rig{t: t, emu: emu, edge: edge, metrics: metrics}
}

// rigConfig renders cfgTemplate ({{port "http"}} etc.: emu's listeners)
// and loads it in lab mode.
func rigConfig(t testing.TB, emu *originemu.Emulator, cfgTemplate string) *config.Config {
	t.Helper()
	tpl := template.Must(template.New("cfg").Funcs(template.FuncMap{
		"port": func(name string) string {
			_, port, _ := net.SplitHostPort(emu.Addr(name))
			return port
		},
	}).Parse(cfgTemplate))
	var buf bytes.Buffer
	if err := tpl.Execute(&buf, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(buf.Bytes(), config.Options{Lab: true})
	if err != nil {
		t.Fatalf("config: %v\n%s", err, buf.String())
	}
	return cfg
}

// do sends a request to the edge with Host host.
func (r *rig) do(method, host, path string, hdr ...string) (*http.Response, []byte, error) {
	r.t.Helper()
	req, err := http.NewRequest(method, r.edge.URL+path, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	resp, err := r.client().Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// client talks to the edge and never follows redirects: the edge's own
// answers are what the tests look at.
func (r *rig) client() *http.Client {
	c := *r.edge.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

func (r *rig) status(method, host, path string, hdr ...string) int {
	r.t.Helper()
	resp, _, err := r.do(method, host, path, hdr...)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode
}

func (r *rig) journal(prefix string) []journal.Request {
	return r.emu.Journal().Query(journal.Query{PathPrefix: prefix}).Requests
}

func (r *rig) waitEnded(prefix string, n int) []journal.Request {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reqs, err := r.emu.Journal().WaitEnded(ctx, journal.Query{PathPrefix: prefix}, n)
	if err != nil {
		r.t.Fatalf("waiting for %d origin requests under %s: %v (have %d)", n, prefix, err, len(reqs))
	}
	return reqs
}

func header(r journal.Request, name string) (string, bool) {
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value, true
		}
	}
	return "", false
}

// waitRecord waits up to 5s for a log record with message msg that match
// accepts. Log records have no barrier to wait on, so this polls.
func (r *rig) waitRecord(msg string, match func(map[string]any) bool) map[string]any {
	r.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, rec := range r.logs.records(msg) {
			if match(rec) {
				return rec
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no %q log record matched", msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
