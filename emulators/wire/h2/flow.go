package h2

import (
	"golang.org/x/net/http2"
)

// Flow control.
//
// Sending: every stream and the connection have a send window (c.sendWin,
// st.sendWin, guarded by c.mu). A writer reserves window with reserve,
// blocking on c.cond until WINDOW_UPDATE or SETTINGS grows it, or until the
// stream or connection ends. Windows are int64: a SETTINGS change can make a
// stream's window negative, and growth past 2^31-1 is a flow-control error.
//
// Receiving: the connection window (inflow, reader goroutine only) is
// returned to the client as soon as DATA arrives, so a handler that does not
// read cannot stall the other streams; each stream's window (requestBody) is
// returned as the handler reads, which bounds what is buffered per stream.

const (
	maxWindow = 1<<31 - 1
	// writeChunk caps the bytes one reservation takes, so that streams
	// sharing a connection interleave.
	writeChunk = 64 << 10
	// connUpdateThreshold is how much consumed connection window is
	// collected before a WINDOW_UPDATE is sent.
	connUpdateThreshold = connRecvWindow / 4
	// streamUpdateThreshold is the same for a stream (see requestBody).
	streamUpdateThreshold = initialStreamWindow / 8
)

// reserve blocks until st may send, then takes up to want bytes (at most
// writeChunk) of both st's and the connection's send window. It returns the
// byte count and the peer's current maximum frame size. Buffered frames are
// flushed before waiting, so the client sees everything that was written.
func (c *conn) reserve(st *stream, want int) (int, uint32, error) {
	flushed := false
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if err := c.writableLocked(st); err != nil {
			return 0, 0, err
		}
		if avail := min(st.sendWin, c.sendWin); avail > 0 {
			n := min(int64(want), avail, writeChunk)
			st.sendWin -= n
			c.sendWin -= n
			return int(n), c.peerMaxFrame, nil
		}
		if !flushed {
			c.mu.Unlock()
			err := c.w.flush()
			c.mu.Lock()
			if err != nil {
				return 0, 0, err
			}
			flushed = true
			continue
		}
		c.cond.Wait()
	}
}

// writableLocked reports why nothing more may be sent on st, if so.
func (c *conn) writableLocked(st *stream) error {
	switch {
	case c.closed:
		return errConnClosed
	case c.goingAway:
		return errConnGoingAway
	case st.err != nil:
		return st.err
	}
	return nil
}

// addSendWindow applies a WINDOW_UPDATE from the client; st is nil for the
// connection. It returns a flow-control error on overflow.
func (c *conn) addSendWindow(st *stream, incr uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	win := &c.sendWin
	if st != nil {
		if st.err != nil {
			return nil
		}
		win = &st.sendWin
	}
	*win += int64(incr)
	if *win > maxWindow {
		if st != nil {
			return streamError(st.id, http2.ErrCodeFlowControl, "stream send window overflow")
		}
		return connError{http2.ErrCodeFlowControl, "connection send window overflow"}
	}
	c.cond.Broadcast()
	return nil
}

// setPeerInitialWindow applies the client's SETTINGS_INITIAL_WINDOW_SIZE to
// every open stream's send window.
func (c *conn) setPeerInitialWindow(v uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delta := int64(v) - c.peerInitWin
	c.peerInitWin = int64(v)
	for _, st := range c.streams {
		st.sendWin += delta
		if st.sendWin > maxWindow {
			return connError{http2.ErrCodeFlowControl, "SETTINGS_INITIAL_WINDOW_SIZE overflows a stream window"}
		}
	}
	c.cond.Broadcast()
	return nil
}

// inflow is the connection's receive window.
type inflow struct {
	avail  int64 // bytes the client may still send
	unsent int64 // bytes received and not yet returned with WINDOW_UPDATE
}

// take accounts for n received bytes.
func (f *inflow) take(n int64) error {
	if n > f.avail {
		return connError{http2.ErrCodeFlowControl, "connection receive window exceeded"}
	}
	f.avail -= n
	return nil
}

// give returns n bytes of window; it reports how much to send in a
// WINDOW_UPDATE now (0 while collecting).
func (f *inflow) give(n int64) uint32 {
	f.unsent += n
	if f.unsent < connUpdateThreshold {
		return 0
	}
	incr := f.unsent
	f.avail += incr
	f.unsent = 0
	return uint32(incr)
}
