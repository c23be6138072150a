package originemu

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"
)

// rawSocket is a TCP socket the emulator holds without serving it: bound
// only (refuse), or listening with a full accept queue (syn-drop).
type rawSocket struct {
	fd        int
	addr      net.Addr
	fillers   []net.Conn
	closeOnce sync.Once
}

// bindSocket binds a TCP socket to addr without listening on it. On Linux a
// SYN to a bound socket that does not listen is answered with RST, so dials
// are refused at once, and the port stays reserved while the emulator runs.
func bindSocket(addr string) (*rawSocket, error) {
	ap, err := resolveAddrPort(addr)
	if err != nil {
		return nil, err
	}
	family, sa := sockaddr(ap)
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("creating socket: %w", err)
	}
	if err := reusePort(fd); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	if err := syscall.Bind(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("binding %s: %w", addr, err)
	}
	local, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("reading bound address: %w", err)
	}
	return &rawSocket{fd: fd, addr: tcpAddr(local)}, nil
}

// synDropSocket listens with a backlog of 0 and fills the accept queue with
// its own connections, which it never accepts. Linux drops a SYN to a
// listener whose accept queue is full, so a client's dial hangs until its
// own timeout.
func synDropSocket(ctx context.Context, addr string) (*rawSocket, error) {
	s, err := bindSocket(addr)
	if err != nil {
		return nil, err
	}
	if err := syscall.Listen(s.fd, 0); err != nil {
		s.close()
		return nil, fmt.Errorf("listening on %s: %w", s.addr, err)
	}
	// Dial until a dial times out: then the queue is full. The first
	// backlog+1 dials complete; with SYN cookies on, a dial can also be
	// reset while the queue fills, which is no reason to stop.
	d := net.Dialer{Timeout: 200 * time.Millisecond}
	var last error
	for i := 0; i < 16; i++ {
		c, err := d.DialContext(ctx, "tcp", s.addr.String())
		if err == nil {
			s.fillers = append(s.fillers, c)
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && len(s.fillers) > 0 {
			return s, nil
		}
		if ctx.Err() != nil {
			break
		}
		last = err
	}
	s.close()
	return nil, fmt.Errorf("filling the accept queue of %s: no dial timed out after 16 tries (last error: %v)", s.addr, last)
}

// close releases the socket once: a second syscall.Close of the same fd
// number could close an unrelated socket that reused it.
func (s *rawSocket) close() {
	s.closeOnce.Do(func() {
		for _, c := range s.fillers {
			c.Close()
		}
		syscall.Close(s.fd)
	})
}

// reusePort lets the sockets of one listener share its address: the
// keeper that holds the port and, in turn, the listening sockets of its
// states (see listenerState). The kernel sends a SYN only to a socket that
// listens, so a bound-only keeper never takes a connection.
func reusePort(fd int) error {
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		return fmt.Errorf("setting SO_REUSEADDR: %w", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, soReusePort, 1); err != nil {
		return fmt.Errorf("setting SO_REUSEPORT: %w", err)
	}
	return nil
}

// soReusePort is SO_REUSEPORT on Linux (the syscall package lacks it).
const soReusePort = 0xf

// listenShared listens on addr, sharing the port with the listener's keeper.
func listenShared(ctx context.Context, addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = reusePort(int(fd)) }); err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(ctx, "tcp", addr)
}

func resolveAddrPort(addr string) (netip.AddrPort, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("resolving %q: %w", addr, err)
	}
	ap := ta.AddrPort()
	if !ap.Addr().IsValid() {
		ap = netip.AddrPortFrom(netip.IPv4Unspecified(), ap.Port())
	}
	return ap, nil
}

func sockaddr(ap netip.AddrPort) (int, syscall.Sockaddr) {
	if ap.Addr().Is4() || ap.Addr().Is4In6() {
		return syscall.AF_INET, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().Unmap().As4()}
	}
	return syscall.AF_INET6, &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}

func tcpAddr(sa syscall.Sockaddr) net.Addr {
	switch a := sa.(type) {
	case *syscall.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
	case *syscall.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(a.Addr[:]), Port: a.Port}
	}
	return &net.TCPAddr{}
}
