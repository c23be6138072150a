package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
)

// The goroutine probe (-goroutine-probe, informational like the ceiling)
// is the epoll probe's proxy on goroutine-per-connection Go, the model
// edgecache is built on: net.Conn and the runtime's netpoller, one
// goroutine per client connection that writes each GET head unchanged to
// a pooled keep-alive origin connection, reads the origin's
// Content-Length response and writes it back in one write. No routing,
// checks, timeouts, log or header handling, and none of net/http (the
// ceiling): between it and nginx is what the goroutine model costs on this
// machine; between edgecache and it, what edgecache's per-request work
// costs. Issue #14's note on 1 KiB proxying rests on the two probes.
//
// Unlike the epoll probe it also caches, so that it measures the hit rows
// too: the first 200 response to a GET of a /hit/ target is kept whole
// (head and body, as the origin sent them) and written back unchanged,
// in one write, for every later GET of the same target. No freshness, no
// Age, no validation: the least a cache hit can cost on goroutines. It
// keeps at most goProbeMaxHits targets (the rows have three); a target
// beyond them is proxied each time.
//
// Like the epoll probe it is a probe, not a proxy: what it does not handle
// (a method other than GET, a GET with a body, an origin response without
// Content-Length or with Transfer-Encoding, an origin that goes away
// mid-response) closes the client's connection, so a client never takes a
// wrong body for a whole one.

// goProbeFlag is the hidden flag that makes bench-peers the goroutine probe.
const goProbeFlag = "serve-goroutine-probe"

// goProbeMaxHead bounds a request or response head the probe reads.
const goProbeMaxHead = 64 << 10

// goProbeMaxHits bounds the /hit/ responses the probe keeps.
const goProbeMaxHits = 64

type goProbe struct {
	ln     net.Listener
	origin string

	mu    sync.Mutex
	idle  []*goOrigin // most recently used last
	conns map[net.Conn]struct{}
	done  bool

	hitMu sync.RWMutex
	hits  map[string][]byte // request target -> whole stored response
}

// goOrigin is one keep-alive connection to the origin.
type goOrigin struct {
	nc net.Conn
	br *bufio.Reader
}

// newGoProbe listens on listen (host:port; port 0 for any) for clients of
// origin (host:port).
func newGoProbe(listen, origin string) (*goProbe, error) {
	if _, _, err := net.SplitHostPort(origin); err != nil {
		return nil, fmt.Errorf("goroutine probe origin %q: want host:port (%v)", origin, err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("goroutine probe listening on %q: %w", listen, err)
	}
	return &goProbe{ln: ln, origin: origin, conns: map[net.Conn]struct{}{}, hits: map[string][]byte{}}, nil
}

// Addr is the address the probe listens on.
func (p *goProbe) Addr() string { return p.ln.Addr().String() }

// run serves until ctx ends, then closes every connection and waits for
// their goroutines.
func (p *goProbe) run(ctx context.Context) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() {
		p.ln.Close()
		p.mu.Lock()
		p.done = true
		for c := range p.conns {
			c.Close()
		}
		for _, o := range p.idle {
			o.nc.Close()
		}
		p.idle = nil
		p.mu.Unlock()
	})
	defer stop()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("goroutine probe accept: %w", err)
		}
		if !p.track(c, true) {
			c.Close()
			continue
		}
		wg.Go(func() {
			defer p.track(c, false)
			defer c.Close()
			p.serve(c)
		})
	}
}

// track adds or removes a connection to close when the probe stops; false
// if it has stopped.
func (p *goProbe) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !add {
		delete(p.conns, c)
		return true
	}
	if p.done {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// serve forwards the client's requests one at a time until one cannot be
// passed on whole.
func (p *goProbe) serve(c net.Conn) {
	br := bufio.NewReaderSize(c, 4<<10)
	var head, resp []byte
	for {
		var err error
		if head, err = readProbeHead(br, head[:0]); err != nil {
			return
		}
		if !forwardable(head) {
			return
		}
		target, cacheable := hitTarget(head)
		if cacheable {
			p.hitMu.RLock()
			stored, ok := p.hits[string(target)]
			p.hitMu.RUnlock()
			if ok {
				if _, err := c.Write(stored); err != nil {
					return
				}
				continue
			}
		}
		o, reused, err := p.originConn()
		if err != nil {
			return
		}
		var headLen int
		resp, headLen, err = o.exchange(head, resp[:0])
		if err != nil && reused {
			// The origin closed the idle connection (its keep-alive
			// timeout): once more on a new one, as the epoll probe's
			// idle connections see the close and are not reused.
			o.nc.Close()
			if o, _, err = p.dial(); err == nil {
				resp, headLen, err = o.exchange(head, resp[:0])
			}
		}
		if err != nil {
			if o != nil {
				o.nc.Close()
			}
			return
		}
		conn, _ := headerValue(resp[:headLen], "Connection")
		if o.br.Buffered() > 0 || bytes.EqualFold(conn, []byte("close")) {
			o.nc.Close() // bytes beyond the response, or the origin ends it
		} else {
			p.put(o)
		}
		if cacheable && bytes.HasPrefix(resp, []byte("HTTP/1.1 200 ")) {
			p.hitMu.Lock()
			if _, ok := p.hits[string(target)]; !ok && len(p.hits) < goProbeMaxHits {
				p.hits[string(target)] = bytes.Clone(resp)
			}
			p.hitMu.Unlock()
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

// hitTarget is a request head's target, and whether the probe caches it
// (a target under /hit/, without a query, so every row's URL is one key).
func hitTarget(head []byte) ([]byte, bool) {
	line, _, _ := bytes.Cut(head, []byte("\r\n"))
	_, rest, _ := bytes.Cut(line, []byte(" "))
	target, _, _ := bytes.Cut(rest, []byte(" "))
	if !bytes.HasPrefix(target, []byte("/hit/")) || bytes.ContainsRune(target, '?') {
		return nil, false
	}
	return target, true
}

// exchange writes head and reads the whole response into resp; headLen
// is the length of its head.
func (o *goOrigin) exchange(head, resp []byte) (_ []byte, headLen int, _ error) {
	if _, err := o.nc.Write(head); err != nil {
		return nil, 0, err
	}
	resp, err := readProbeHead(o.br, resp)
	if err != nil {
		return nil, 0, err
	}
	n, ok := wholeLength(resp)
	if !ok {
		return nil, 0, errors.New("not a response the probe can pass on whole")
	}
	headLen = len(resp)
	resp = append(resp, make([]byte, n)...)
	if _, err := io.ReadFull(o.br, resp[headLen:]); err != nil {
		return nil, 0, err
	}
	return resp, headLen, nil
}

// forwardable reports whether a probe passes a request head on: a GET
// whose head carries no body (one that declared a body would have it
// taken for the next request's head), the same for both probes.
func forwardable(head []byte) bool {
	cl, withLength := headerValue(head, "Content-Length")
	_, chunked := headerValue(head, "Transfer-Encoding")
	return bytes.HasPrefix(head, []byte("GET ")) && !chunked && (!withLength || bytes.Equal(cl, []byte("0")))
}

// wholeLength is a response head's Content-Length, and false for a
// response a probe cannot pass on whole (no or a bad Content-Length,
// Transfer-Encoding).
func wholeLength(head []byte) (int, bool) {
	cl, ok := headerValue(head, "Content-Length")
	n, err := strconv.Atoi(string(cl))
	_, chunked := headerValue(head, "Transfer-Encoding")
	return n, ok && err == nil && n >= 0 && !chunked
}

// headerValue is the trimmed value of the first field name in head.
func headerValue(head []byte, name string) ([]byte, bool) {
	_, rest, _ := bytes.Cut(head, []byte("\r\n")) // the start line
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(k, []byte(name)) {
			return bytes.TrimSpace(v), true
		}
	}
	return nil, false
}

// readProbeHead appends the next head (through its empty line) to buf.
func readProbeHead(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		buf = append(buf, line...)
		if len(buf) > goProbeMaxHead {
			return nil, errors.New("head too long")
		}
		if len(line) <= 2 && (len(line) == 1 || line[0] == '\r') {
			return buf, nil
		}
	}
}

// originConn is an idle origin connection (reused), or a new one.
func (p *goProbe) originConn() (_ *goOrigin, reused bool, _ error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		o := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return o, true, nil
	}
	p.mu.Unlock()
	return p.dial()
}

func (p *goProbe) dial() (*goOrigin, bool, error) {
	nc, err := net.Dial("tcp", p.origin)
	if err != nil {
		return nil, false, err
	}
	return &goOrigin{nc: nc, br: bufio.NewReaderSize(nc, 16<<10)}, false, nil
}

// put keeps an origin connection for the next request.
func (p *goProbe) put(o *goOrigin) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		o.nc.Close()
		return
	}
	p.idle = append(p.idle, o)
}

// goProbeMain runs the probe from bench-peers' own arguments:
// -serve-goroutine-probe ADDR ORIGIN_HOSTPORT.
func goProbeMain(ctx context.Context, args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("-%s wants ADDR ORIGIN_HOSTPORT, got %q", goProbeFlag, args)
	}
	p, err := newGoProbe(args[0], args[1])
	if err != nil {
		return err
	}
	return p.run(ctx)
}
