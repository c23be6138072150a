// Package logjson is a slog.Handler that writes the same JSON lines as
// slog.JSONHandler (without AddSource or ReplaceAttr), faster for the flat
// records the edge writes on every request (LOG-1): slog's handler
// encodes every float64 with encoding/json (a reflecting Encoder per
// value), which was ~4% of a cache hit's CPU (issue #14). Records of
// string, integer, float, bool, duration and time attributes are encoded
// here, byte for byte as slog would; anything else (groups, Any values,
// LogValuers, empty keys, NaN or infinite floats, years outside 0-9999)
// goes to a slog.JSONHandler on the same writer with the same attributes,
// so the output is always slog's.
package logjson

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// Handler writes JSON lines; one Write per record.
type Handler struct {
	w     io.Writer
	mu    *sync.Mutex // shared with the handlers derived by WithAttrs
	level slog.Leveler
	pre   []byte      // the encoded attributes of WithAttrs, each ",key:value"
	attrs []slog.Attr // the same, for the slog handler of the slow path
	slow  slog.Handler
	bufs  *sync.Pool
	clock *clock // shared with the handlers derived by WithAttrs
}

// New returns a handler writing to w; opts may be nil. opts' AddSource
// and ReplaceAttr are not supported: with either set, New returns
// slog.NewJSONHandler(w, opts) itself.
func New(w io.Writer, opts *slog.HandlerOptions) slog.Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	if opts.AddSource || opts.ReplaceAttr != nil {
		return slog.NewJSONHandler(w, opts)
	}
	lv := opts.Level
	if lv == nil {
		lv = slog.LevelInfo
	}
	mu := &sync.Mutex{}
	return &Handler{w: w, mu: mu, level: lv, slow: slog.NewJSONHandler(&lockedWriter{w: w, mu: mu}, opts),
		bufs: &sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}, clock: &clock{}}
}

// lockedWriter makes the slow path's writes take the fast path's lock, so
// lines of both never interleave.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Enabled reports whether level is at least the handler's.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// WithAttrs returns a handler whose records carry attrs first.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	n := *h
	n.slow = h.slow.WithAttrs(attrs)
	n.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	pre := append([]byte(nil), h.pre...)
	for _, a := range attrs {
		var ok bool
		if pre, ok = appendAttr(pre, a); !ok {
			return n.slow // not flat: every record of it goes to slog
		}
	}
	n.pre = pre
	return &n
}

// WithGroup returns slog's handler: records in a group go to slog.
func (h *Handler) WithGroup(name string) slog.Handler {
	return h.slow.WithGroup(name)
}

// Handle writes r as one JSON line.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	bp := h.bufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 {
			h.bufs.Put(bp)
		}
	}()
	b, ok := h.encode((*bp)[:0], r)
	*bp = b
	if !ok {
		return h.slow.Handle(ctx, r)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b)
	return err
}

// encode appends r's line to b; false if r needs slog's own encoding.
func (h *Handler) encode(b []byte, r slog.Record) ([]byte, bool) {
	b, ok := h.appendHead(b, r.Time, r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b, ok = appendAttr(b, a)
		return ok
	})
	return append(b, "}\n"...), ok
}

// appendHead appends the line's start: time, level, message and the
// attributes of WithAttrs; false if slog must encode it.
func (h *Handler) appendHead(b []byte, t time.Time, level slog.Level, msg string) ([]byte, bool) {
	b = append(b, '{')
	if !t.IsZero() {
		t = t.Round(0)
		if y := t.Year(); y < 0 || y >= 10000 {
			return b, false
		}
		b = append(b, `"time":"`...)
		b = h.clock.appendRFC3339Nano(b, t)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendString(b, level.String())
	b = append(b, `,"msg":`...)
	b = appendString(b, msg)
	return append(b, h.pre...), true
}

// clock formats record times, keeping the formatted second of the last
// one: records come many to a second, and formatting a whole time was a
// fifth of a record's encoding (issue #14).
type clock struct{ last atomic.Pointer[stamp] }

// stamp is one second of one location, formatted.
type stamp struct {
	sec  int64
	loc  *time.Location
	date []byte // "2006-01-02T15:04:05"
	zone []byte // "Z07:00"
}

// appendRFC3339Nano is t.AppendFormat(b, time.RFC3339Nano) for t without
// a monotonic reading. Within one location a second has one offset, so
// the second's text depends on (t.Unix(), t.Location()) only.
func (c *clock) appendRFC3339Nano(b []byte, t time.Time) []byte {
	sec, loc := t.Unix(), t.Location()
	s := c.last.Load()
	if s == nil || s.sec != sec || s.loc != loc {
		s = &stamp{sec: sec, loc: loc, date: t.AppendFormat(nil, "2006-01-02T15:04:05"), zone: t.AppendFormat(nil, "Z07:00")}
		c.last.Store(s)
	}
	b = append(b, s.date...)
	if ns := t.Nanosecond(); ns != 0 { // ".999999999": trailing zeros dropped
		var frac [10]byte
		frac[0] = '.'
		for i := 9; i >= 1; i-- {
			frac[i] = byte('0' + ns%10)
			ns /= 10
		}
		n := 10
		for frac[n-1] == '0' {
			n--
		}
		b = append(b, frac[:n]...)
	}
	return append(b, s.zone...)
}

// LogAttrs is log.LogAttrs(ctx, level, msg, attrs...), the same line,
// for the edge's one record per request (LOG-1): when log's handler is
// this package's, the line is encoded straight from attrs, without the
// slog.Record that copies every attribute past the fifth into a slice
// of its own (issue #14). Any other handler, or an attribute that is
// not flat, takes log.LogAttrs itself.
func LogAttrs(ctx context.Context, log *slog.Logger, level slog.Level, msg string, attrs ...slog.Attr) {
	h, ok := log.Handler().(*Handler)
	if !ok || !h.Enabled(ctx, level) || !h.logFlat(time.Now(), level, msg, attrs) {
		log.LogAttrs(ctx, level, msg, attrs...)
	}
}

// LogAttrsAt is LogAttrs for a record of time t, for a caller that has
// just read the clock itself (the edge, for the request's latency): one
// clock read fewer per record (issue #14). Through another handler, or
// for an attribute that is not flat, the record goes to log's handler as
// a slog.Record of time t, without a source position.
func LogAttrsAt(ctx context.Context, log *slog.Logger, t time.Time, level slog.Level, msg string, attrs ...slog.Attr) {
	h, ok := log.Handler().(*Handler)
	if ok && h.Enabled(ctx, level) && h.logFlat(t, level, msg, attrs) {
		return
	}
	if !log.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(t, level, msg, 0)
	r.AddAttrs(attrs...)
	_ = log.Handler().Handle(ctx, r) // as slog.Logger.LogAttrs, which drops the handler's error
}

// logFlat writes the line of a record at t, reporting false, having
// written nothing, if it is not flat.
func (h *Handler) logFlat(t time.Time, level slog.Level, msg string, attrs []slog.Attr) bool {
	bp := h.bufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= 64<<10 {
			h.bufs.Put(bp)
		}
	}()
	b, ok := h.appendHead((*bp)[:0], t, level, msg)
	for _, a := range attrs {
		if !ok {
			break
		}
		b, ok = appendAttr(b, a)
	}
	*bp = b
	if !ok {
		return false
	}
	b = append(b, "}\n"...)
	*bp = b
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _ = h.w.Write(b) // as slog.Logger.LogAttrs, which drops the handler's error
	return true
}

// appendAttr appends ",key:value" for a flat attribute; false for one
// slog encodes otherwise (or that slog drops: the zero Attr).
func appendAttr(b []byte, a slog.Attr) ([]byte, bool) {
	if a.Key == "" {
		return b, false
	}
	b = append(b, ',')
	b = appendString(b, a.Key)
	b = append(b, ':')
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		b = appendString(b, v.String())
	case slog.KindInt64:
		b = strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		b = strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		return appendFloat(b, v.Float64())
	case slog.KindBool:
		b = strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		b = strconv.AppendInt(b, int64(v.Duration()), 10)
	case slog.KindTime:
		t := v.Time()
		if y := t.Year(); y < 0 || y >= 10000 {
			return b, false
		}
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	default:
		return b, false
	}
	return b, true
}

// appendFloat is encoding/json's float64 encoding (which slog uses).
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if b, ok := appendMillis(b, f); ok {
		return b, true
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9, as encoding/json does
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendMillis appends f as appendFloat would when f is a whole number
// of thousandths below 1e9, as the edge's latencies in milliseconds are
// (microseconds / 1000): without strconv's shortest-form search, a fifth
// of a record's encoding (issue #14). The thousandths u are exact in a
// float64 and f is the nearest float64 to u/1000, so the decimal u/1000
// reads back as f; any other decimal of as many digits or fewer is at
// least 0.001 from it, far more than f's half ulp (below 6e-8), so it is
// also the shortest, which is what strconv and encoding/json write. It
// reports false, having appended nothing, for any other f.
func appendMillis(b []byte, f float64) ([]byte, bool) {
	if !(f > 0 && f < 1e9) {
		return b, false // also NaN; 0 and -0 take strconv's path
	}
	u := uint64(math.Round(f * 1000))
	if float64(u)/1000 != f {
		return b, false
	}
	b = strconv.AppendUint(b, u/1000, 10)
	frac := u % 1000
	if frac == 0 {
		return b, true
	}
	b = append(b, '.', byte('0'+frac/100))
	if frac%100 != 0 {
		b = append(b, byte('0'+frac/10%10))
		if frac%10 != 0 {
			b = append(b, byte('0'+frac%10))
		}
	}
	return b, true
}

const hexDigits = "0123456789abcdef"

// appendString appends s quoted and escaped as slog's JSON handler does
// (not HTML-escaped; invalid UTF-8 as \ufffd; U+2028 and U+2029 escaped).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if plain[s[i]] { // one table load per byte: most of a record is plain (issue #14)
			i++
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plain marks the bytes a JSON string holds as they are: ASCII from
// space on, less '"' and '\\'. Never written after initialization.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()
