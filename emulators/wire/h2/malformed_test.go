package h2

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

// frameBytes builds a raw frame.
func frameBytes(typ http2.FrameType, flags http2.Flags, stream uint32, payload []byte) []byte {
	b := make([]byte, 9, 9+len(payload))
	b[0], b[1], b[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	b[3], b[4] = byte(typ), byte(flags)
	binary.BigEndian.PutUint32(b[5:], stream)
	return append(b, payload...)
}

func TestMalformedConnection(t *testing.T) {
	settings := frameBytes(http2.FrameSettings, 0, 0, nil)
	preface := []byte(http2.ClientPreface)
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	cases := []struct {
		name  string
		input []byte
		code  http2.ErrCode
	}{
		{"garbage after preface", cat(preface, []byte("this is not an HTTP/2 frame, not at all\r\n")), http2.ErrCodeProtocol},
		{"HTTP/1.1 instead of preface", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), http2.ErrCodeProtocol},
		{"first frame not SETTINGS", cat(preface, frameBytes(http2.FramePing, 0, 0, make([]byte, 8))), http2.ErrCodeProtocol},
		{"DATA on stream 0", cat(preface, settings, frameBytes(http2.FrameData, 0, 0, []byte("x"))), http2.ErrCodeProtocol},
		{"DATA on idle stream", cat(preface, settings, frameBytes(http2.FrameData, 0, 5, []byte("x"))), http2.ErrCodeProtocol},
		{"HEADERS on even stream", cat(preface, settings, frameBytes(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 2, []byte{0x82})), http2.ErrCodeProtocol},
		{"bad HPACK", cat(preface, settings, frameBytes(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 1, []byte{0xff, 0xff, 0xff, 0xff})), http2.ErrCodeCompression},
		{"CONTINUATION alone", cat(preface, settings, frameBytes(http2.FrameContinuation, http2.FlagContinuationEndHeaders, 1, []byte{0x82})), http2.ErrCodeProtocol},
		{"frame too large", cat(preface, settings, frameBytes(http2.FrameData, 0, 1, make([]byte, 20000))), http2.ErrCodeFrameSize},
		{"window overflow", cat(preface, settings, frameBytes(http2.FrameWindowUpdate, 0, 0, []byte{0x7f, 0xff, 0xff, 0xff})), http2.ErrCodeFlowControl},
		{"bad SETTINGS value", cat(preface, frameBytes(http2.FrameSettings, 0, 0, []byte{0, 4, 0x80, 0, 0, 0})), http2.ErrCodeFlowControl},
		{"PUSH_PROMISE", cat(preface, settings, frameBytes(http2.FramePushPromise, http2.FlagPushPromiseEndHeaders, 1, []byte{0, 0, 0, 2, 0x82})), http2.ErrCodeProtocol},
		{"stream id going down", cat(preface, settings,
			frameBytes(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 3, []byte{0x82, 0x87, 0x84}),
			frameBytes(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 1, []byte{0x82, 0x87, 0x84})), http2.ErrCodeProtocol},
		{"RST_STREAM on idle stream", cat(preface, settings, frameBytes(http2.FrameRSTStream, 0, 7, []byte{0, 0, 0, 8})), http2.ErrCodeProtocol},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTLSServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {}))
			rc := dialRaw(t, ts)
			rc.write(tc.input)
			ga := rc.waitGoAway()
			if ga.ErrCode != tc.code {
				t.Errorf("GOAWAY %v, want %v", ga.ErrCode, tc.code)
			}
			if _, err := rc.next(); err != io.EOF {
				t.Errorf("after GOAWAY: %v, want EOF", err)
			}
			_ = rc.nc.Close()
			reason := ts.waitReason(t, func(string) bool { return true })
			if !strings.HasPrefix(reason, "protocol error: ") {
				t.Errorf("reason %q, want a protocol error", reason)
			}
		})
	}
}

func TestMalformedStream(t *testing.T) {
	req := []string{":method", "GET", ":scheme", "https", ":authority", "x", ":path", "/"}
	with := func(kv ...string) []string { return append(append([]string(nil), req...), kv...) }
	cases := []struct {
		name string
		kv   []string
	}{
		{"missing :path", []string{":method", "GET", ":scheme", "https", ":authority", "x"}},
		{"upper-case name", with("X-Upper", "1")},
		{"connection header", with("connection", "close")},
		{"te not trailers", with("te", "gzip")},
		{"pseudo after regular", append([]string{"x-a", "1"}, req...)},
		{"unknown pseudo", with(":bogus", "1")},
		{"bad path", []string{":method", "GET", ":scheme", "https", ":authority", "x", ":path", "no-slash"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newH2CServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {}))
			rc := dialRaw(t, ts)
			rc.handshake()
			rc.request(1, true, tc.kv...)
			rst := waitStream[*http2.RSTStreamFrame](rc, 1)
			if rst.ErrCode != http2.ErrCodeProtocol {
				t.Errorf("RST_STREAM %v, want PROTOCOL_ERROR", rst.ErrCode)
			}
			// The connection still works.
			rc.get(3, "/")
			if resp := rc.readResponse(3); resp.rst != nil || resp.fields[0].Value != "200" {
				t.Errorf("next stream: %v %v", resp.frames, resp.fields)
			}
		})
	}
}

func TestRequestBodyLengthMismatch(t *testing.T) {
	ts := newH2CServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	rc := dialRaw(t, ts)
	rc.handshake()
	rc.request(1, false, ":method", "POST", ":scheme", "http", ":authority", "x", ":path", "/", "content-length", "10")
	if err := rc.fr.WriteData(1, true, []byte("short")); err != nil {
		t.Fatal(err)
	}
	rst := waitStream[*http2.RSTStreamFrame](rc, 1)
	if rst.ErrCode != http2.ErrCodeProtocol {
		t.Errorf("RST_STREAM %v, want PROTOCOL_ERROR", rst.ErrCode)
	}
}

// Random bytes after a valid start must never panic or hang the server.
func TestRandomInputNoPanic(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 50
	}
	srv := &Server{Logger: quietLogger(), IdleTimeout: time.Second, Handler: handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("ok"))
	})}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range iterations {
		input := []byte(http2.ClientPreface)
		input = append(input, frameBytes(http2.FrameSettings, 0, 0, nil)...)
		junk := make([]byte, rng.IntN(300))
		for j := range junk {
			junk[j] = byte(rng.UintN(256))
		}
		if i%2 == 0 && len(junk) >= 9 { // plausible frame headers reach the frame handlers
			junk[0], junk[1] = 0, 0
			junk[3] = byte(rng.UintN(10))
			junk[5], junk[6], junk[7] = 0, 0, 0
		}
		input = append(input, junk...)

		server, client := net.Pipe()
		go func() { _, _ = io.Copy(io.Discard, client) }()
		go func() {
			_, _ = client.Write(input)
			time.Sleep(5 * time.Millisecond)
			_ = client.Close()
		}()
		done := make(chan string, 1)
		go func() { done <- srv.ServeConn(context.Background(), server, nil) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("iteration %d: ServeConn did not return; input %x", i, input)
		}
	}
}

func TestHeaderListTooLarge(t *testing.T) {
	ts := newH2CServer(t, handlerOf(func(w wire.ResponseWriter, r *wire.Request) {
		t.Error("handler called for an oversized header list")
	}))
	rc := dialRaw(t, ts)
	rc.handshake()
	kv := []string{":method", "GET", ":scheme", "http", ":authority", "x", ":path", "/"}
	big := strings.Repeat("v", 16000)
	for i := range 65 {
		kv = append(kv, fmt.Sprintf("x-%02d", i), big)
	}
	kv = append(kv, "x-last", strings.Repeat("w", 10000)) // crosses the limit in the last frame
	block := rc.headerBlock(kv...)
	for first := true; len(block) > 0; first = false {
		frag := block[:min(len(block), 16384)]
		block = block[len(frag):]
		var err error
		if first {
			err = rc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: frag, EndStream: true, EndHeaders: len(block) == 0})
		} else {
			err = rc.fr.WriteContinuation(1, len(block) == 0, frag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	resp := rc.readResponse(1)
	if len(resp.fields) == 0 || resp.fields[0].Value != "431" {
		t.Errorf("response %v %v, want 431", resp.frames, resp.fields)
	}
}
