package logjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// logBoth logs the same record through slog.JSONHandler and New and
// returns both outputs.
func logBoth(t *testing.T, opts *slog.HandlerOptions, with []slog.Attr, group string, level slog.Level, msg string, attrs ...slog.Attr) (want, got string) {
	t.Helper()
	var wb, gb bytes.Buffer
	hs := []slog.Handler{slog.NewJSONHandler(&wb, opts), New(&gb, opts)}
	at := time.Date(2026, 12, 1, 22, 50, 1, 123456789, time.FixedZone("x", 3600))
	for _, h := range hs {
		if len(with) > 0 {
			h = h.WithAttrs(with)
		}
		if group != "" {
			h = h.WithGroup(group)
		}
		if !h.Enabled(context.Background(), level) {
			continue
		}
		r := slog.NewRecord(at, level, msg, 0)
		r.AddAttrs(attrs...)
		if err := h.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	return wb.String(), gb.String()
}

type valuer struct{}

func (valuer) LogValue() slog.Value { return slog.StringValue("resolved") }

// The output is slog.JSONHandler's, byte for byte, for what the edge logs
// and for every kind it hands to slog.
func TestSameAsSlog(t *testing.T) {
	strs := []string{"", "plain", `q"uote\back`, "nl\ncr\rtab\t", "ctl\x00\x01\x1f\x7f", "<html>&amp;", "ünïcødé ✓",
		"bad\xffutf8\xc3", "sep\u2028\u2029end", "/a?b=c&d=e f"}
	floats := []float64{0, math.Copysign(0, -1), 1, -1.5, 0.123, 12.345, 1e-6, 9.99e-7, 1e-7, 1.5e-10, 1e20, 1e21, 1.7976931348623157e308,
		math.SmallestNonzeroFloat64, 123456789.125, math.NaN(), math.Inf(1), math.Inf(-1)}
	cases := []struct {
		name  string
		opts  *slog.HandlerOptions
		with  []slog.Attr
		group string
		level slog.Level
		attrs []slog.Attr
	}{
		{name: "edge record", attrs: []slog.Attr{slog.String("request_id", "abc-1"), slog.String("method", "GET"), slog.Int("status", 200),
			slog.Int64("bytes", 1024), slog.Float64("latency_ms", 0.123), slog.String("cache_status", "hit")}},
		{name: "no attrs"},
		{name: "kinds", attrs: []slog.Attr{slog.Uint64("u", math.MaxUint64), slog.Int64("i", math.MinInt64), slog.Bool("t", true), slog.Bool("f", false),
			slog.Duration("d", 1500*time.Millisecond), slog.Time("tm", time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)),
			slog.Time("tm0", time.Time{}), slog.Time("far", time.Date(10001, 1, 1, 0, 0, 0, 0, time.UTC))}},
		{name: "any and errors", attrs: []slog.Attr{slog.Any("err", errors.New("boom \"x\"")), slog.Any("m", map[string]int{"a": 1}),
			slog.Any("nil", nil), slog.Any("v", valuer{}), slog.Any("bytes", []byte("hi"))}},
		{name: "groups", attrs: []slog.Attr{slog.Group("g", slog.String("a", "b")), slog.Group("", slog.Int("inl", 1)), slog.Group("empty")}},
		{name: "empty key and zero attr", attrs: []slog.Attr{slog.String("", "v"), {}, slog.Int("after", 1)}},
		{name: "with attrs", with: []slog.Attr{slog.String("svc", "edge"), slog.Float64("f", 2.5)}, attrs: []slog.Attr{slog.Int("n", 1)}},
		{name: "with any attrs", with: []slog.Attr{slog.Any("v", valuer{})}, attrs: []slog.Attr{slog.Int("n", 1)}},
		{name: "with group", with: []slog.Attr{slog.Int("pre", 1)}, group: "grp", attrs: []slog.Attr{slog.Int("n", 1)}},
		{name: "empty group name", group: "", attrs: []slog.Attr{slog.Int("n", 1)}},
		{name: "below level", opts: &slog.HandlerOptions{Level: slog.LevelWarn}, level: slog.LevelInfo, attrs: []slog.Attr{slog.Int("n", 1)}},
		{name: "custom level", level: slog.LevelInfo + 2, attrs: []slog.Attr{slog.Int("n", 1)}},
		{name: "add source", opts: &slog.HandlerOptions{AddSource: true}, attrs: []slog.Attr{slog.Int("n", 1)}},
	}
	for _, s := range strs {
		cases = append(cases, struct {
			name  string
			opts  *slog.HandlerOptions
			with  []slog.Attr
			group string
			level slog.Level
			attrs []slog.Attr
		}{name: "string " + s, with: []slog.Attr{slog.String("w"+s, s)}, attrs: []slog.Attr{slog.String(s+"k", s), slog.String("k", s)}})
	}
	for _, f := range floats {
		cases = append(cases, struct {
			name  string
			opts  *slog.HandlerOptions
			with  []slog.Attr
			group string
			level slog.Level
			attrs []slog.Attr
		}{name: "float", attrs: []slog.Attr{slog.Float64("f", f), slog.Float64("neg", -f)}})
	}
	for _, c := range cases {
		for _, msg := range []string{"client request", strs[len(strs)-3]} {
			want, got := logBoth(t, c.opts, c.with, c.group, c.level, msg, c.attrs...)
			if want != got {
				t.Errorf("%s, msg %q:\nslog:    %q\nlogjson: %q", c.name, msg, want, got)
			}
		}
	}
}

// Random strings and floats, compared with slog's encoding.
func TestSameAsSlogRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune{'a', 'Z', '0', ' ', '"', '\\', '\n', '\x00', '\x1f', '\x7f', 'é', '✓', '\u2028', '\U0001F600', utf8Bad}
	for i := range 2000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			if r := alphabet[rng.IntN(len(alphabet))]; r == utf8Bad {
				sb.WriteByte(0xff)
			} else {
				sb.WriteRune(r)
			}
		}
		f := math.Float64frombits(rng.Uint64())
		if i%2 == 0 {
			f = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(50)-25))
		}
		want, got := logBoth(t, nil, nil, "", slog.LevelInfo, sb.String(), slog.String(sb.String(), sb.String()), slog.Float64("f", f))
		if want != got {
			t.Fatalf("string %q float %v:\nslog:    %q\nlogjson: %q", sb.String(), f, want, got)
		}
	}
}

const utf8Bad = rune(-2) // stands for an invalid byte in the alphabet

// A record's line is one Write, whichever path encoded it.
func TestOneWritePerRecord(t *testing.T) {
	var w countingWriter
	log := slog.New(New(&w, nil))
	log.Info("fast", "a", 1)
	log.Info("slow", "m", map[string]int{"a": 1})
	if w.writes != 2 || strings.Count(w.buf.String(), "\n") != 2 {
		t.Fatalf("%d writes, output %q: want 2 writes of one line each", w.writes, w.buf.String())
	}
}

type countingWriter struct {
	buf    bytes.Buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) { c.writes++; return c.buf.Write(p) }

func BenchmarkEdgeRecord(b *testing.B) {
	attrs := []slog.Attr{slog.String("request_id", "k3j2-12345"), slog.String("method", "GET"), slog.String("host", "127.0.0.1:8080"),
		slog.String("uri", "/hit/1k.bin"), slog.String("range", ""), slog.Int("status", 200), slog.Int64("bytes", 1024),
		slog.Float64("latency_ms", 0.087), slog.String("cache_status", "hit"), slog.String("path_matcher", "m"), slog.Int64("route_priority", 1),
		slog.String("cache_key_fingerprint", "0123456789abcdef")}
	for _, h := range []struct {
		name string
		h    slog.Handler
	}{{"slog", slog.NewJSONHandler(discard{}, nil)}, {"logjson", New(discard{}, nil)}} {
		b.Run(h.name, func(b *testing.B) {
			log := slog.New(h.h)
			b.ReportAllocs()
			for b.Loop() {
				log.LogAttrs(context.Background(), slog.LevelInfo, "client request", attrs...)
			}
		})
	}
	b.Run("logjson.LogAttrs", func(b *testing.B) {
		log := slog.New(New(discard{}, nil))
		b.ReportAllocs()
		for b.Loop() {
			LogAttrs(context.Background(), log, slog.LevelInfo, "client request", attrs...)
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// LogAttrs's straight path writes slog's line; a record that is not flat,
// a disabled level and another handler all take slog.Logger.LogAttrs.
func TestLogAttrsSameAsSlog(t *testing.T) {
	at := time.Date(2026, 12, 2, 2, 10, 0, 987654321, time.UTC)
	with := []slog.Attr{slog.String("service", "edge")}
	for _, c := range []struct {
		name  string
		attrs []slog.Attr
		flat  bool
	}{
		{"edge record", []slog.Attr{slog.String("request_id", "a-1"), slog.String("method", "GET"), slog.String("host", "h"),
			slog.String("uri", "/x\"y"), slog.String("range", ""), slog.Int("status", 200), slog.Int64("bytes", 1024),
			slog.Float64("latency_ms", 0.087), slog.String("cache_status", "hit"), slog.String("path_matcher", "m"),
			slog.Int64("route_priority", 1), slog.String("origin", "o"), slog.Int("attempts", 1), slog.String("proxy_status", ""),
			slog.String("cache_key_fingerprint", "0123456789abcdef")}, true},
		{"none", nil, true},
		{"a group", []slog.Attr{slog.String("a", "b"), slog.Group("g", slog.Int("n", 1))}, false},
		{"empty key", []slog.Attr{slog.String("", "x")}, false},
	} {
		var wb, gb bytes.Buffer
		sh := slog.NewJSONHandler(&wb, nil).WithAttrs(with)
		r := slog.NewRecord(at, slog.LevelInfo, "client request", 0)
		r.AddAttrs(c.attrs...)
		if err := sh.Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		h := New(&gb, nil).WithAttrs(with).(*Handler)
		if ok := h.logFlat(at, slog.LevelInfo, "client request", c.attrs); ok != c.flat {
			t.Fatalf("%s: logFlat = %v, want %v", c.name, ok, c.flat)
		}
		if c.flat && gb.String() != wb.String() {
			t.Errorf("%s:\nslog:    %q\nlogjson: %q", c.name, wb.String(), gb.String())
		}
		if !c.flat && gb.Len() != 0 {
			t.Errorf("%s: logFlat wrote %q for a record it refused", c.name, gb.String())
		}
	}
	var gb, tb bytes.Buffer
	LogAttrs(context.Background(), slog.New(New(&gb, nil)), slog.LevelInfo, "m", slog.Group("g", slog.Int("n", 1)))
	LogAttrs(context.Background(), slog.New(New(&gb, nil)), slog.LevelDebug, "hidden")
	LogAttrs(context.Background(), slog.New(slog.NewTextHandler(&tb, nil)), slog.LevelInfo, "text", slog.Int("n", 2))
	if !strings.Contains(gb.String(), `"g":{"n":1}`) || strings.Contains(gb.String(), "hidden") || !strings.Contains(tb.String(), "msg=text n=2") {
		t.Errorf("fallbacks: JSON %q, text %q", gb.String(), tb.String())
	}
}

// appendMillis writes what encoding/json writes for every whole number of
// thousandths it takes, and takes no other float.
func TestAppendMillis(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var us []uint64
	for u := range uint64(20000) {
		us = append(us, u)
	}
	for range 200000 {
		us = append(us, rng.Uint64N(1e12)) // up to 1e9 ms and past it
	}
	us = append(us, 999999999999, 999999999000, 1000000000000, 1<<53)
	for _, u := range us {
		f := float64(u) / 1000
		want, _ := json.Marshal(f)
		got, ok := appendMillis(nil, f)
		if ok && string(got) != string(want) {
			t.Fatalf("%d/1000: appendMillis %q, encoding/json %q", u, got, want)
		}
		if ok != (u > 0 && f < 1e9) {
			t.Fatalf("%d/1000 (%v): took it = %v", u, f, ok)
		}
	}
	for _, f := range []float64{math.Copysign(0, -1), -0.5, 0.0005, 0.1234, 1e-7, 1.0000001, math.Nextafter(0.087, 1), math.NaN(), math.Inf(1), 1e9, 2e9} {
		if got, ok := appendMillis(nil, f); ok {
			t.Errorf("appendMillis took %v, writing %q", f, got)
		}
	}
}

// The clock writes time.RFC3339Nano's text for every time, including
// times of one second in several locations in turn, whole seconds and
// fractions with trailing zeros.
func TestClockSameAsAppendFormat(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		ny = time.FixedZone("EST", -5*3600)
	}
	locs := []*time.Location{time.UTC, time.Local, time.FixedZone("x", 3600), time.FixedZone("y", -(9*3600 + 30*60)), ny}
	// 2026-03-08 06:59:59 UTC is the last second of EST in New York.
	base := []time.Time{time.Date(2026, 3, 8, 6, 59, 59, 0, time.UTC), time.Date(2026, 12, 7, 23, 59, 59, 999999999, time.UTC),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 100, time.UTC)}
	var c clock
	for _, b := range base {
		for step := range 3 {
			for _, ns := range []int{0, 1, 10, 100000000, 123456789, 120000000, 999999999, rng.IntN(1e9)} {
				for _, loc := range locs {
					tm := time.Unix(b.Unix()+int64(step), int64(ns)).In(loc)
					want := tm.AppendFormat(nil, time.RFC3339Nano)
					if got := c.appendRFC3339Nano(nil, tm); string(got) != string(want) {
						t.Fatalf("%v in %v: clock %q, AppendFormat %q", tm, loc, got, want)
					}
				}
			}
		}
	}
	for range 20000 {
		tm := time.Unix(rng.Int64N(253402300799), rng.Int64N(1e9)).In(locs[rng.IntN(len(locs))])
		if got, want := c.appendRFC3339Nano(nil, tm), tm.AppendFormat(nil, time.RFC3339Nano); string(got) != string(want) {
			t.Fatalf("%v: clock %q, AppendFormat %q", tm, got, want)
		}
	}
}

// LogAttrsAt writes the record at the time given, through this package's
// handler and through any other, and nothing below the level.
func TestLogAttrsAt(t *testing.T) {
	at := time.Date(2026, 12, 7, 23, 55, 1, 500000000, time.UTC)
	attrs := []slog.Attr{slog.String("k", "v"), slog.Float64("latency_ms", 0.25)}
	var want, fast, other, group bytes.Buffer
	r := slog.NewRecord(at, slog.LevelInfo, "client request", 0)
	r.AddAttrs(attrs...)
	if err := slog.NewJSONHandler(&want, nil).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	LogAttrsAt(context.Background(), slog.New(New(&fast, nil)), at, slog.LevelInfo, "client request", attrs...)
	LogAttrsAt(context.Background(), slog.New(slog.NewJSONHandler(&other, nil)), at, slog.LevelInfo, "client request", attrs...)
	LogAttrsAt(context.Background(), slog.New(New(&group, nil)), at, slog.LevelInfo, "m", slog.Group("g", slog.Int("n", 1)))
	LogAttrsAt(context.Background(), slog.New(New(&group, nil)), at, slog.LevelDebug, "hidden")
	if fast.String() != want.String() || other.String() != want.String() {
		t.Errorf("slog: %q\nlogjson: %q\nanother handler: %q", want.String(), fast.String(), other.String())
	}
	if g := group.String(); !strings.Contains(g, `"time":"2026-12-07T23:55:01.5Z"`) || !strings.Contains(g, `"g":{"n":1}`) || strings.Contains(g, "hidden") {
		t.Errorf("not flat or below the level: %q", g)
	}
}
