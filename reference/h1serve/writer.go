package h1serve

import (
	"io"
	"net"
)

// gatherWriter buffers a connection's writes as bufio.Writer does, with
// one difference (issue #14): a write that does not fit beside what is
// buffered goes out with it in one gathered write (writev on a TCP
// connection), where bufio.Writer sends the buffer topped up with the
// write's first bytes and then the rest, two system calls. So a response
// head and a large body write leave in one system call, as nginx sends
// them. Errors are sticky: after one, every call returns it.
type gatherWriter struct {
	w   io.Writer
	buf []byte // cap: the buffer's size
	err error
	iov [2][]byte // the gathered write's buffers, kept to spare an allocation
}

func newGatherWriter(w io.Writer, size int) *gatherWriter {
	return &gatherWriter{w: w, buf: make([]byte, 0, size)}
}

func (g *gatherWriter) Write(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if len(g.buf)+len(p) <= cap(g.buf) {
		g.buf = append(g.buf, p...)
		return len(p), nil
	}
	if len(g.buf) == 0 {
		n, err := g.w.Write(p)
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
		g.err = err
		return n, err
	}
	held := len(g.buf)
	g.iov = [2][]byte{g.buf, p}
	bufs := net.Buffers(g.iov[:])
	n, err := bufs.WriteTo(g.w)
	g.iov = [2][]byte{}
	g.buf = g.buf[:0]
	if err == nil && n < int64(held+len(p)) {
		err = io.ErrShortWrite
	}
	if err != nil {
		g.err = err
		// What of p went out: the bytes past the buffered ones.
		return max(0, min(len(p), int(n)-held)), err
	}
	return len(p), nil
}

// WriteBuffers writes what is buffered and bufs in one gathered write
// (writev, as many system calls as the socket takes them in); n counts
// bufs' bytes written.
func (g *gatherWriter) WriteBuffers(bufs [][]byte) (n int64, err error) {
	if g.err != nil {
		return 0, g.err
	}
	held := len(g.buf)
	v := make(net.Buffers, 0, len(bufs)+1)
	if held > 0 {
		v = append(v, g.buf)
	}
	v = append(v, bufs...)
	var want int64
	for _, b := range bufs {
		want += int64(len(b))
	}
	n, err = v.WriteTo(g.w)
	g.buf = g.buf[:0]
	n = max(0, n-int64(held))
	if err == nil && n < want {
		err = io.ErrShortWrite
	}
	g.err = err
	return n, err
}

func (g *gatherWriter) WriteString(s string) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if len(g.buf)+len(s) <= cap(g.buf) {
		g.buf = append(g.buf, s...)
		return len(s), nil
	}
	return g.Write([]byte(s)) // rare: a head field larger than what is left
}

// Flush writes what is buffered.
func (g *gatherWriter) Flush() error {
	if g.err != nil {
		return g.err
	}
	if len(g.buf) == 0 {
		return nil
	}
	n, err := g.w.Write(g.buf)
	if err == nil && n < len(g.buf) {
		err = io.ErrShortWrite
	}
	g.buf = g.buf[:0]
	g.err = err
	return err
}
