package upstream

import (
	"syscall"
	"unsafe"
)

// peek looks at the socket without blocking or consuming (MSG_PEEK |
// MSG_DONTWAIT) and records whether the origin closed it, sent bytes, or
// neither. It always reports done, so RawConn.Read never waits.
func (pc *h1Conn) peek(fd uintptr) bool {
	var b [1]byte
	n, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	switch {
	case errno == syscall.EAGAIN:
		pc.peeked = peekAlive
	case errno != 0 || n == 0:
		pc.peeked = peekClosed
	default:
		pc.peeked = peekData
	}
	return true
}
