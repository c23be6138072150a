package receive

import (
	"strings"
	"testing"
)

// FuzzH1Scan: whatever the bytes, the HTTP/1.1 follower never panics,
// gives the same output and refusal however the bytes are split, and
// passes every byte unchanged unless it refused a head (then the output
// ends with the placeholder) or the connection turned out to be h2c.
func FuzzH1Scan(f *testing.F) {
	const host = "Host: a.example\r\n"
	for _, s := range []string{
		"GET / HTTP/1.1\r\n" + host + "\r\n",
		"POST /a HTTP/1.1\r\n" + host + "Content-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\n\r\n",
		"POST /a HTTP/1.1\r\n" + host + "Transfer-Encoding: chunked\r\n\r\n3;x=1\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
		"POST /a HTTP/1.1\r\n" + host + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"GET /a HTTP/1.1\r\n" + host + "X: 1\r\n 2\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"\r\nGET /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
	} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, raw string, split uint8) {
		lim := DefaultLimits()
		lim.MaxURLBytes, lim.MaxHeaderBytes, lim.MaxHeaderFields = 256, 1024, 8 // reachable by the fuzzer
		run := func(n int) (string, string, bool) {
			s := newH1(lim, "tok")
			var out []byte
			var refused string
			for i := 0; i < len(raw); i += n {
				var e *Error
				var h2 bool
				var rest []byte
				out, e, h2, rest = s.feed([]byte(raw[i:min(i+n, len(raw))]), out)
				if e != nil && refused == "" {
					refused = e.Error()
				}
				if h2 {
					return string(append(out, rest...)) + raw[min(i+n, len(raw)):], refused, true
				}
			}
			return string(out), refused, false
		}
		n := int(split)%16 + 1
		out1, ref1, h2a := run(1)
		outN, refN, h2b := run(n)
		outAll, refAll, h2c := run(max(len(raw), 1))
		if out1 != outN || out1 != outAll || ref1 != refN || ref1 != refAll || h2a != h2b || h2a != h2c {
			t.Fatalf("depends on the split: %q/%q/%q %q/%q/%q", out1, outN, outAll, ref1, refN, refAll)
		}
		switch {
		case ref1 != "":
			if !strings.HasSuffix(out1, rejectHead("tok")) || !strings.HasPrefix(raw, strings.TrimSuffix(out1, rejectHead("tok"))) {
				t.Fatalf("refused (%s) but the output %q is not a prefix of the input and the placeholder", ref1, out1)
			}
		case out1 != raw && !strings.HasPrefix(raw, out1):
			t.Fatalf("output %q is not the input %q (or a held-back prefix of it)", out1, raw)
		}
	})
}

// FuzzH2In: the h2 follower never panics, and what it releases is the
// input with at most END_STREAM flags cleared, cut before a frame when the
// reset limit is passed.
func FuzzH2In(f *testing.F) {
	f.Add([]byte("SM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x04\x03\x00\x00\x00\x00\x01\x00\x00\x00\x08"), uint8(5))
	f.Fuzz(func(t *testing.T, raw []byte, split uint8) {
		lim := DefaultLimits()
		lim.H2MaxResets = 2
		h := newH2in(lim, 6)
		n := int(split)%16 + 1
		var out []byte
		for i := 0; i < len(raw); i += n {
			var calm bool
			out, calm = h.feed(raw[i:min(i+n, len(raw))], out)
			if calm {
				break
			}
		}
		if len(out) > len(raw) {
			t.Fatalf("released %d bytes of %d", len(out), len(raw))
		}
		for i := range out {
			if out[i] != raw[i] && out[i] != raw[i]&^flagEndStream {
				t.Fatalf("byte %d changed from %#x to %#x", i, raw[i], out[i])
			}
		}
	})
}
