package h2

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawClient speaks frames directly, for exact wire checks and malformed
// input.
type rawClient struct {
	t    testing.TB
	nc   net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	henc *hpack.Encoder
}

// dialRaw connects to ts without sending anything.
func dialRaw(t testing.TB, ts *testServer) *rawClient {
	t.Helper()
	var nc net.Conn
	var err error
	if ts.tls {
		nc, err = tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.roots, NextProtos: []string{"h2"}})
	} else {
		nc, err = net.Dial("tcp", ts.addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	rc := &rawClient{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
	rc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	rc.fr.AllowIllegalWrites = true
	rc.henc = hpack.NewEncoder(&rc.hbuf)
	return rc
}

// handshake sends the preface and an empty SETTINGS frame.
func (rc *rawClient) handshake() {
	rc.t.Helper()
	rc.write([]byte(http2.ClientPreface))
	if err := rc.fr.WriteSettings(); err != nil {
		rc.t.Fatal(err)
	}
}

func (rc *rawClient) write(p []byte) {
	rc.t.Helper()
	if _, err := rc.nc.Write(p); err != nil {
		rc.t.Fatal(err)
	}
}

// headerBlock encodes fields given as name, value pairs.
func (rc *rawClient) headerBlock(kv ...string) []byte {
	rc.hbuf.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		_ = rc.henc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return append([]byte(nil), rc.hbuf.Bytes()...)
}

// request opens stream id with the given header fields.
func (rc *rawClient) request(id uint32, endStream bool, kv ...string) {
	rc.t.Helper()
	err := rc.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID: id, BlockFragment: rc.headerBlock(kv...), EndStream: endStream, EndHeaders: true,
	})
	if err != nil {
		rc.t.Fatal(err)
	}
}

// get opens stream id with a simple GET for path.
func (rc *rawClient) get(id uint32, path string) {
	rc.t.Helper()
	rc.request(id, true, ":method", "GET", ":scheme", "https", ":authority", "example.test", ":path", path)
}

// next reads the next frame, failing the test after a timeout.
func (rc *rawClient) next() (http2.Frame, error) {
	_ = rc.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	return rc.fr.ReadFrame()
}

// waitFor reads frames until match accepts one and returns it.
func (rc *rawClient) waitFor(what string, match func(http2.Frame) bool) http2.Frame {
	rc.t.Helper()
	for {
		f, err := rc.next()
		if err != nil {
			rc.t.Fatalf("waiting for %s: %v", what, err)
		}
		if match(f) {
			return f
		}
	}
}

// waitGoAway reads until GOAWAY and returns it.
func (rc *rawClient) waitGoAway() *http2.GoAwayFrame {
	rc.t.Helper()
	return rc.waitFor("GOAWAY", func(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok }).(*http2.GoAwayFrame)
}

// waitStream reads until a frame of type T on stream id.
func waitStream[T http2.Frame](rc *rawClient, id uint32) T {
	rc.t.Helper()
	return rc.waitFor("frame on stream", func(f http2.Frame) bool {
		_, ok := f.(T)
		return ok && f.Header().StreamID == id
	}).(T)
}

// readResponse collects a response on stream id: header fields, body, and
// the frame types seen, until END_STREAM or RST_STREAM.
type rawResponse struct {
	fields []hpack.HeaderField
	body   []byte
	frames []string
	rst    *http2.RSTStreamFrame
}

func (rc *rawClient) readResponse(id uint32) rawResponse {
	rc.t.Helper()
	var r rawResponse
	for {
		f, err := rc.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				rc.t.Fatalf("connection closed before response on stream %d ended", id)
			}
			rc.t.Fatal(err)
		}
		if f.Header().StreamID != id {
			continue
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			r.frames = append(r.frames, "HEADERS")
			r.fields = append(r.fields, f.Fields...)
			if f.StreamEnded() {
				return r
			}
		case *http2.DataFrame:
			r.frames = append(r.frames, "DATA")
			r.body = append(r.body, f.Data()...)
			if f.StreamEnded() {
				return r
			}
		case *http2.RSTStreamFrame:
			r.frames = append(r.frames, "RST_STREAM")
			r.rst = f
			return r
		}
	}
}
