package h1serve

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"strings"
	"sync"
)

// errTrailerTooLarge ends a chunked body whose trailer section passed the
// header bytes limit.
var errTrailerTooLarge = errors.New("request trailer section too large")

// body is a request body on the connection: Content-Length bytes or
// chunks and a trailer section (whose fields go to the request's Trailer
// at the end, where receive.Check and its guard find them: MTH-2).
type body struct {
	mu      sync.Mutex // reads may come from a goroutine the handler started
	done    bool       // the handler returned: reads are the server's own (drain)
	c       *conn
	req     *http.Request
	remain  int64     // Content-Length bytes still to read
	chunks  io.Reader // chunked: httputil's chunked reader on the conn's buffer
	err     error     // sticky: io.EOF at the end
	closed  bool
	maxTrlr int
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.done {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.read(p)
}

func (b *body) read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	b.c.sendContinue()
	var n int
	var err error
	if b.chunks != nil {
		n, err = b.chunks.Read(p)
		if err == io.EOF {
			err = b.readTrailer()
		}
	} else {
		n, err = b.c.br.Read(p[:min(int64(len(p)), b.remain)])
		b.remain -= int64(n)
		switch {
		case b.remain == 0:
			err = io.EOF
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
	}
	if err != nil {
		b.err = err
		if err == io.EOF {
			b.c.bodyDone()
		}
	}
	return n, err
}

// readTrailer reads the trailer section after the last chunk (RFC 9112
// 7.1.2) into the request's Trailer.
func (b *body) readTrailer() error {
	size := 0
	for {
		line, err := b.c.br.ReadSlice('\n')
		if err != nil {
			if err == io.EOF || err == bufio.ErrBufferFull {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("reading the request trailer: %w", err)
		}
		l := string(trimEOL(line))
		if l == "" {
			return io.EOF
		}
		if size += len(l) + 2; size > b.maxTrlr {
			return errTrailerTooLarge
		}
		name, value, ok := strings.Cut(l, ":")
		if !ok {
			return fmt.Errorf("malformed trailer line %q", clip(l))
		}
		if b.req.Trailer == nil {
			b.req.Trailer = http.Header{}
		}
		b.req.Trailer.Add(textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name)), strings.TrimSpace(value))
	}
}

func (b *body) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	return nil
}

// end marks the handler returned: from now on only drain reads (a read
// in progress in another goroutine finishes first); complete reports
// whether the body was read to its end.
func (b *body) end() (complete bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	return b.err == io.EOF
}

// drain reads what is left of the body, up to max bytes; true means the
// connection's framing is intact after it. Call it after end.
func (b *body) drain(max int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err == io.EOF
	}
	_, err := io.Copy(io.Discard, io.LimitReader(readFunc(b.read), max))
	return err == nil && b.err == io.EOF
}

type readFunc func([]byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

func newBody(c *conn, req *http.Request, p *parsed) *body {
	b := &body{c: c, req: req, remain: p.contentLength, maxTrlr: c.srv.Limits.MaxHeaderBytes}
	if p.chunked {
		b.chunks = httputil.NewChunkedReader(c.br)
	}
	return b
}
