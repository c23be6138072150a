package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"unsafe"
)

// The epoll probe (-epoll-probe, informational like the ceiling, /pass/
// rows only) is the smallest HTTP/1.1 proxy an event loop makes: one loop
// on raw epoll (edge-triggered, a short read taken as drained, as nginx
// does), the wait a raw system call so the runtime keeps the loop's P
// instead of handing it off at every wait, each GET head forwarded
// unchanged to the origin over a keep-alive pool, and the origin's
// Content-Length response sent back in one write. No routing, checks,
// timeouts, log or header handling: what the event-loop model costs with
// no per-request work, against goroutine-per-connection Go (edgecache, the
// ceiling) and nginx. Issue #14's note on 1 KiB proxying rests on it.
//
// It is a probe, not a proxy: anything it does not handle (a method other
// than GET, a GET with a body, an origin response without Content-Length or with
// Transfer-Encoding, an origin that goes away mid-response) closes the
// client's connection, so a client never takes a wrong body for a whole one.

// epollProbeFlag is the hidden flag that makes bench-peers the probe.
const epollProbeFlag = "serve-epoll-probe"

const (
	// waitMillis bounds one epoll wait, so the loop sees its context end.
	waitMillis = 100
	// epollET is EPOLLET as the uint32 EpollEvent.Events wants it.
	epollET = 1 << 31
	// epollProbeSupported: this platform has epoll.
	epollProbeSupported = true
)

type epollProbe struct {
	ep, lfd int
	addr    string
	origin  syscall.SockaddrInet4
	conns   map[int]*probeConn
	idle    []*probeConn // origin connections, most recently used last
	rbuf    []byte
}

type probeConn struct {
	fd     int
	client bool
	in     []byte     // read, not yet used
	out    []byte     // to write when the socket takes it
	peer   *probeConn // the other side while a request is out
	dead   bool
}

// newEpollProbe listens on listen (host:port, IPv4; port 0 for any) for
// clients of origin (host:port, IPv4).
func newEpollProbe(listen, origin string) (*epollProbe, error) {
	la, err := net.ResolveTCPAddr("tcp4", listen)
	if err != nil {
		return nil, fmt.Errorf("epoll probe listen address %q: %w", listen, err)
	}
	oa, err := net.ResolveTCPAddr("tcp4", origin)
	if err != nil || oa.IP.To4() == nil {
		return nil, fmt.Errorf("epoll probe origin %q: want an IPv4 host:port (%v)", origin, err)
	}
	p := &epollProbe{conns: map[int]*probeConn{}, rbuf: make([]byte, 64<<10), lfd: -1, ep: -1}
	p.origin.Port = oa.Port
	copy(p.origin.Addr[:], oa.IP.To4())
	if err := p.listen(la); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *epollProbe) listen(la *net.TCPAddr) error {
	var err error
	if p.lfd, err = syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0); err != nil {
		return fmt.Errorf("epoll probe socket: %w", err)
	}
	if err := syscall.SetsockoptInt(p.lfd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return fmt.Errorf("epoll probe SO_REUSEADDR: %w", err)
	}
	sa := &syscall.SockaddrInet4{Port: la.Port}
	if ip := la.IP.To4(); ip != nil {
		copy(sa.Addr[:], ip)
	}
	if err := syscall.Bind(p.lfd, sa); err != nil {
		return fmt.Errorf("epoll probe bind %v: %w", la, err)
	}
	if err := syscall.Listen(p.lfd, 1024); err != nil {
		return fmt.Errorf("epoll probe listen: %w", err)
	}
	got, err := syscall.Getsockname(p.lfd)
	if err != nil {
		return fmt.Errorf("epoll probe getsockname: %w", err)
	}
	g := got.(*syscall.SockaddrInet4)
	p.addr = net.JoinHostPort(net.IP(g.Addr[:]).String(), strconv.Itoa(g.Port))
	if p.ep, err = syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err != nil {
		return fmt.Errorf("epoll probe epoll_create1: %w", err)
	}
	if err := syscall.EpollCtl(p.ep, syscall.EPOLL_CTL_ADD, p.lfd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(p.lfd)}); err != nil {
		return fmt.Errorf("epoll probe adding the listener: %w", err)
	}
	return nil
}

// Addr is the address the probe listens on.
func (p *epollProbe) Addr() string { return p.addr }

// run serves until ctx ends, then closes every socket.
func (p *epollProbe) run(ctx context.Context) error {
	defer p.close()
	evs := make([]syscall.EpollEvent, 256)
	for ctx.Err() == nil {
		// A raw system call: the loop's goroutine keeps its P while it
		// waits (the point of the probe); a signal (the runtime's
		// preemption, a GC's stop) ends the wait with EINTR, and the
		// wait is bounded, so the rest of the process is not starved.
		r, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(p.ep),
			uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), waitMillis, 0, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return fmt.Errorf("epoll probe epoll_pwait: %w", errno)
		}
		for _, ev := range evs[:int(r)] {
			fd := int(ev.Fd)
			if fd == p.lfd {
				p.accept()
				continue
			}
			c := p.conns[fd]
			if c == nil {
				continue
			}
			if ev.Events&syscall.EPOLLOUT != 0 && len(c.out) > 0 {
				p.flush(c)
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && !c.dead {
				p.readable(c)
			}
		}
	}
	return nil
}

func (p *epollProbe) close() {
	for _, c := range p.conns {
		syscall.Close(c.fd)
	}
	clear(p.conns)
	for _, fd := range []int{p.lfd, p.ep} {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
	p.lfd, p.ep = -1, -1
}

// add registers fd for edge-triggered reads and writes.
func (p *epollProbe) add(c *probeConn) error {
	ev := &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT | syscall.EPOLLRDHUP | epollET, Fd: int32(c.fd)}
	if err := syscall.EpollCtl(p.ep, syscall.EPOLL_CTL_ADD, c.fd, ev); err != nil {
		syscall.Close(c.fd)
		return err
	}
	p.conns[c.fd] = c
	return nil
}

func (p *epollProbe) accept() {
	for {
		fd, _, err := syscall.Accept4(p.lfd, syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN, or a connection gone before it was taken
		}
		_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
		_ = p.add(&probeConn{fd: fd, client: true})
	}
}

// drop closes c and, mid-request, its peer: a client whose response cannot
// be completed loses its connection.
func (p *epollProbe) drop(c *probeConn) {
	if c.dead {
		return
	}
	c.dead = true
	delete(p.conns, c.fd)
	syscall.Close(c.fd)
	if peer := c.peer; peer != nil {
		c.peer, peer.peer = nil, nil
		p.drop(peer)
	}
}

func (p *epollProbe) readable(c *probeConn) {
	for {
		n, err := syscall.Read(c.fd, p.rbuf)
		if err == syscall.EAGAIN {
			break
		}
		if err != nil || n == 0 {
			p.drop(c)
			return
		}
		c.in = append(c.in, p.rbuf[:n]...)
		if n < len(p.rbuf) {
			break // drained: the next edge says when more comes
		}
	}
	if c.client {
		p.request(c)
	} else {
		p.response(c)
	}
}

// request forwards the client's next head, one request at a time.
func (p *epollProbe) request(c *probeConn) {
	if c.peer != nil || c.dead {
		return
	}
	end := bytes.Index(c.in, []byte("\r\n\r\n"))
	if end < 0 {
		return
	}
	head := c.in[:end]
	if !forwardable(head) {
		p.drop(c)
		return
	}
	o, err := p.originConn()
	if err != nil {
		p.drop(c)
		return
	}
	c.peer, o.peer = o, c
	p.write(o, c.in[:end+4])
	c.in = c.in[end+4:]
}

func (p *epollProbe) originConn() (*probeConn, error) {
	for len(p.idle) > 0 {
		o := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if !o.dead {
			return o, nil
		}
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	if err := syscall.Connect(fd, &p.origin); err != nil && err != syscall.EINPROGRESS {
		syscall.Close(fd)
		return nil, err
	}
	o := &probeConn{fd: fd}
	return o, p.add(o)
}

// response sends the origin's whole response to its client in one write,
// once it has all arrived.
func (p *epollProbe) response(o *probeConn) {
	end := bytes.Index(o.in, []byte("\r\n\r\n"))
	if end < 0 {
		return
	}
	head := o.in[:end]
	n, ok := wholeLength(head)
	if !ok || o.peer == nil {
		p.drop(o) // not a response this probe can pass on whole
		return
	}
	if len(o.in) < end+4+n {
		return
	}
	conn, _ := headerValue(head, "Connection")
	c := o.peer
	o.peer, c.peer = nil, nil
	p.write(c, o.in[:end+4+n])
	o.in = o.in[end+4+n:]
	if len(o.in) > 0 || bytes.EqualFold(conn, []byte("close")) {
		p.drop(o) // bytes beyond the response, or the origin ends it
	} else {
		p.idle = append(p.idle, o)
	}
	p.request(c) // a pipelined next request
}

func (p *epollProbe) write(c *probeConn, b []byte) {
	if len(c.out) > 0 {
		c.out = append(c.out, b...)
		return
	}
	n, err := syscall.Write(c.fd, b)
	switch {
	case err == syscall.EAGAIN: // not connected yet, or the socket is full
		n = 0
	case err != nil:
		p.drop(c)
		return
	}
	if n < len(b) {
		c.out = append(c.out[:0], b[n:]...)
	}
}

func (p *epollProbe) flush(c *probeConn) {
	n, err := syscall.Write(c.fd, c.out)
	switch {
	case err == syscall.EAGAIN:
	case err != nil:
		p.drop(c)
	default:
		c.out = c.out[n:]
	}
}

// epollProbeMain runs the probe from bench-peers' own arguments:
// -serve-epoll-probe ADDR ORIGIN_HOSTPORT.
func epollProbeMain(ctx context.Context, args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("-%s wants ADDR ORIGIN_HOSTPORT, got %q", epollProbeFlag, args)
	}
	p, err := newEpollProbe(args[0], args[1])
	if err != nil {
		return err
	}
	return p.run(ctx)
}
