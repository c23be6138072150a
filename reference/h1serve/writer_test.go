package h1serve

import (
	"bytes"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
)

// callsWriter records each Write it gets; after failAfter bytes (if set)
// it writes what fits and fails.
type callsWriter struct {
	out       bytes.Buffer
	calls     []int
	failAfter int
}

var errSink = errors.New("sink failed")

func (w *callsWriter) Write(p []byte) (int, error) {
	w.calls = append(w.calls, len(p))
	if w.failAfter > 0 && w.out.Len()+len(p) > w.failAfter {
		n := w.failAfter - w.out.Len()
		w.out.Write(p[:n])
		return n, errSink
	}
	return w.out.Write(p)
}

// TestGatherWriter: what goes in comes out, in order, with the buffer's
// writes where bufio.Writer would make them, except that a write which
// overflows the buffer goes out with it (one net.Buffers write, which a
// plain io.Writer gets as one Write per buffer).
func TestGatherWriter(t *testing.T) {
	type op struct {
		s     string
		flush bool
	}
	for _, tc := range []struct {
		name  string
		ops   []op
		calls []int // the sink's Write sizes
	}{
		{"fits: nothing until Flush", []op{{s: "head"}, {s: "body"}, {flush: true}}, []int{8}},
		{"empty Flush writes nothing", []op{{flush: true}}, nil},
		{"large write, empty buffer: straight through", []op{{s: strings.Repeat("b", 20)}, {flush: true}}, []int{20}},
		{"large write after a head: the two together", []op{{s: "head"}, {s: strings.Repeat("b", 20)}, {flush: true}}, []int{4, 20}},
		{"overflowing write: buffer and write together", []op{{s: "1234567890"}, {s: "abcdefgh"}, {s: "x"}, {flush: true}}, []int{10, 8, 1}},
		{"exactly full stays buffered", []op{{s: "1234567890123456"}, {flush: true}}, []int{16}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &callsWriter{}
			g := newGatherWriter(sink, 16)
			var want strings.Builder
			for _, o := range tc.ops {
				if o.flush {
					if err := g.Flush(); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want.WriteString(o.s)
				if n, err := g.WriteString(o.s); err != nil || n != len(o.s) {
					t.Fatalf("WriteString(%q) = %d, %v", o.s, n, err)
				}
			}
			if got := sink.out.String(); got != want.String() {
				t.Errorf("sink got %q, want %q", got, want.String())
			}
			if !slices.Equal(sink.calls, tc.calls) {
				t.Errorf("sink's writes %v, want %v", sink.calls, tc.calls)
			}
			if len(g.buf) != 0 {
				t.Errorf("%d bytes still buffered after Flush", len(g.buf))
			}
		})
	}
}

// TestGatherWriterErrors: a failed write reports how much of its own
// bytes went out, and every later call returns the same error without
// writing.
func TestGatherWriterErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		head      string
		write     string
		failAfter int
		wantN     int
	}{
		{"gathered: fails inside the buffered bytes", "headhead", strings.Repeat("b", 20), 5, 0},
		{"gathered: fails inside the write", "headhead", strings.Repeat("b", 20), 12, 4},
		{"straight through: fails inside the write", "", strings.Repeat("b", 20), 7, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &callsWriter{failAfter: tc.failAfter}
			g := newGatherWriter(sink, 16)
			g.WriteString(tc.head)
			n, err := g.Write([]byte(tc.write))
			if !errors.Is(err, errSink) || n != tc.wantN {
				t.Fatalf("Write = %d, %v; want %d, %v", n, err, tc.wantN, errSink)
			}
			calls := len(sink.calls)
			if n, err := g.WriteString("more"); n != 0 || !errors.Is(err, errSink) {
				t.Errorf("WriteString after the failure = %d, %v", n, err)
			}
			if err := g.Flush(); !errors.Is(err, errSink) {
				t.Errorf("Flush after the failure = %v", err)
			}
			if len(sink.calls) != calls {
				t.Errorf("the sink was written after the failure: %v", sink.calls)
			}
		})
	}
	t.Run("short write without an error is io.ErrShortWrite", func(t *testing.T) {
		g := newGatherWriter(shortWriter{}, 16)
		g.WriteString("abc")
		if err := g.Flush(); !errors.Is(err, io.ErrShortWrite) {
			t.Errorf("Flush = %v, want io.ErrShortWrite", err)
		}
	})
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

// TestGatherWriterTCP: over a real TCP connection (writev) a head and a
// large body arrive whole and in order.
func TestGatherWriterTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	body := bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16)
	g := newGatherWriter(nc, 8<<10)
	g.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n")
	if n, err := g.Write(body); err != nil || n != len(body) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if err := g.Flush(); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	want := append([]byte("HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n"), body...)
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the peer read %d bytes, not the %d written in order", len(b), len(want))
	}
}
