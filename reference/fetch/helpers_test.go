package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// The lab's listeners: name -> profile.
var labListeners = []originemu.ListenerConfig{
	{Name: "http", Profile: originemu.HTTP},
	{Name: "http-b", Profile: originemu.HTTP},
	{Name: "http-c", Profile: originemu.HTTP},
	{Name: "https", Profile: originemu.HTTPS},
	{Name: "https-b", Profile: originemu.HTTPS},
	{Name: "h2", Profile: originemu.H2},
	{Name: "h2-b", Profile: originemu.H2},
	{Name: "tls-expired", Profile: originemu.TLSExpired},
	{Name: "tls-wrong-name", Profile: originemu.TLSWrongName},
	{Name: "tls-untrusted", Profile: originemu.TLSUntrusted},
	{Name: "refuse", Profile: originemu.Refuse},
	{Name: "blackhole", Profile: originemu.Blackhole},
	{Name: "syn-drop", Profile: originemu.SYNDrop},
}

// Names the lab resolves to 127.0.0.1 (like curl --resolve).
var labNames = []string{"origin.test", "backup.test", "other.test", "allowed.test",
	"media.example.com", "svc.example.com", "origin.example.com", "failover.example.com"}

type lab struct {
	t      *testing.T
	emu    *originemu.Emulator
	client *upstream.Client
	logs   *logBuffer
}

func newLab(t *testing.T) *lab {
	t.Helper()
	emu, err := originemu.Start(context.Background(), originemu.Config{
		Listeners: labListeners,
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("starting emulator: %v", err)
	}
	t.Cleanup(func() { emu.Close() })
	resolve := map[string]string{}
	for _, n := range labNames {
		resolve[n] = "127.0.0.1"
	}
	client := upstream.New(upstream.Options{RootCAs: emu.CA().Pool(), Resolve: resolve, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(client.Close)
	return &lab{t: t, emu: emu, client: client, logs: &logBuffer{}}
}

func (l *lab) port(listener string) int {
	l.t.Helper()
	addr := l.emu.Addr(listener)
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		l.t.Fatalf("listener %q: %v", listener, err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// origin is an origin on a listener with lab defaults (sub-second
// timeouts where it matters); the protocol follows the listener's profile
// (HTTPS for the TLS and connection fault listeners).
func (l *lab) origin(name, listener string, mods ...func(*config.EffectiveOrigin)) config.EffectiveOrigin {
	l.t.Helper()
	info, ok := l.emu.Listener(listener)
	if !ok {
		l.t.Fatalf("no listener %q", listener)
	}
	protocol := config.ProtocolHTTPS
	switch info.Profile {
	case originemu.HTTP:
		protocol = config.ProtocolHTTP
	case originemu.H2:
		protocol = config.ProtocolHTTP2
	}
	o := config.EffectiveOrigin{
		Name: name, Address: "origin.test", Protocol: protocol, Port: l.port(listener),
		MaxAttempts: 1, RetryConditions: []string{config.RetryConnectFailure},
		ConnectTimeout: time.Second, MaxAttemptsTimeout: 5 * time.Second,
		ReadTimeout: time.Second, ResponseTimeout: 5 * time.Second,
	}
	for _, m := range mods {
		m(&o)
	}
	return o
}

func attempts(n int) func(*config.EffectiveOrigin) {
	return func(o *config.EffectiveOrigin) { o.MaxAttempts = n }
}

func failover(name string) func(*config.EffectiveOrigin) {
	return func(o *config.EffectiveOrigin) { o.Failover = name }
}

func retryOn(conds ...string) func(*config.EffectiveOrigin) {
	return func(o *config.EffectiveOrigin) { o.RetryConditions = conds }
}

func timeouts(connect, maxAttempts, read, response time.Duration) func(*config.EffectiveOrigin) {
	return func(o *config.EffectiveOrigin) {
		set := func(dst *time.Duration, v time.Duration) {
			if v > 0 {
				*dst = v
			}
		}
		set(&o.ConnectTimeout, connect)
		set(&o.MaxAttemptsTimeout, maxAttempts)
		set(&o.ReadTimeout, read)
		set(&o.ResponseTimeout, response)
	}
}

func redirects(codes ...int) func(*config.EffectiveOrigin) {
	return func(o *config.EffectiveOrigin) { o.RedirectCodes = codes }
}

func (l *lab) engine(origins ...config.EffectiveOrigin) *Engine {
	m := map[string]config.EffectiveOrigin{}
	for _, o := range origins {
		m[o.Name] = o
	}
	return New(l.client, m, slog.New(slog.NewJSONHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

func (l *lab) rule(rs ...rules.Rule) {
	l.t.Helper()
	if _, err := l.emu.AddRules(rs...); err != nil {
		l.t.Fatalf("adding rules: %v", err)
	}
}

func (l *lab) reqs(q journal.Query) []journal.Request {
	return l.emu.Journal().Query(q).Requests
}

func (l *lab) waitEnded(q journal.Query, n int) []journal.Request {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reqs, err := l.emu.Journal().WaitEnded(ctx, q, n)
	if err != nil {
		l.t.Fatalf("waiting for %d ended requests matching %+v: %v (have %d)", n, q, err, len(reqs))
	}
	return reqs
}

func get(path string) Request {
	return Request{Method: "GET", PathAndQuery: path, Header: map[string][]string{}, ClientHost: "media.example.com", RequestID: "req-" + path}
}

// fetched is a fetch with its body read to the end.
type fetched struct {
	*Result
	body    []byte
	readErr error
	elapsed time.Duration // Fetch call only
}

func (l *lab) fetch(e *Engine, primary string, r Request) fetched {
	l.t.Helper()
	start := time.Now()
	res := e.Fetch(context.Background(), primary, r)
	f := fetched{Result: res, elapsed: time.Since(start)}
	if res.Response != nil {
		f.body, f.readErr = io.ReadAll(res.Response.Body)
		res.Response.Body.Close()
	}
	return f
}

// outcomes lists the attempts' outcomes and origins, for messages.
func (f fetched) outcomes() string {
	var parts []string
	for _, a := range f.Attempts {
		parts = append(parts, fmt.Sprintf("%s=%s(%v+%v)", a.Origin, a.Outcome, a.Start.Sub(f.Attempts[0].Start).Round(time.Millisecond), a.Duration.Round(time.Millisecond)))
	}
	return strings.Join(parts, " ")
}

func (f fetched) wantStatus(t *testing.T, status int) {
	t.Helper()
	if f.Status != status {
		t.Fatalf("status %d (%s), want %d; attempts: %s", f.Status, f.Reason, status, f.outcomes())
	}
	if status == 502 || status == 504 {
		if f.Response != nil {
			t.Fatalf("synthesized %d carries an origin response", status)
		}
	} else if f.Response == nil || f.Response.StatusCode != status {
		t.Fatalf("Response %v, want the origin's %d", f.Response, status)
	}
}

func (f fetched) wantAttempts(t *testing.T, outcomes ...string) {
	t.Helper()
	var got []string
	for _, a := range f.Attempts {
		got = append(got, a.Outcome.String())
	}
	if strings.Join(got, ",") != strings.Join(outcomes, ",") {
		t.Fatalf("attempt outcomes %q, want %q (%s)", got, outcomes, f.outcomes())
	}
}

func wantObject(t *testing.T, path string, body []byte) {
	t.Helper()
	obj := synth.Object{Path: path, Size: 1024, Version: "1"}
	if err := synth.Verify(obj, 0, body); err != nil || len(body) != 1024 {
		t.Fatalf("body (%d bytes) is not the object %s: %v", len(body), path, err)
	}
}

func within(t *testing.T, what string, got, lo, hi time.Duration) {
	t.Helper()
	if got < lo || got >= hi {
		t.Errorf("%s took %v, want within [%v, %v)", what, got, lo, hi)
	}
}

func ptr[T any](v T) *T { return &v }

func header(r journal.Request, name string) []string {
	var out []string
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, name) {
			out = append(out, h.Value)
		}
	}
	return out
}

// logBuffer collects JSON log records.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) records(msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(b.buf.String(), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}
