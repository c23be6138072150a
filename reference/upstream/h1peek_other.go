//go:build !linux

package upstream

// peek is not implemented here: a reused connection is assumed alive.
func (pc *h1Conn) peek(uintptr) bool {
	pc.peeked = peekAlive
	return true
}
