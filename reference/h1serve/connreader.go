package h1serve

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// aLongTimeAgo is a read deadline in the past: it ends a pending read.
var aLongTimeAgo = time.Unix(1, 0)

// connReader sits under the connection's bufio.Reader. While a handler
// waits on its request's context, one background read (watch) looks for
// the client going away; a byte it reads (a pipelined request) is kept
// for the next Read.
type connReader struct {
	nc net.Conn

	mu      sync.Mutex
	cond    sync.Cond
	inRead  bool
	hasByte bool
	b       [1]byte
	gone    error       // the background read's error: the client left
	cleared atomic.Bool // start cleared the read deadline
}

func newConnReader(nc net.Conn) *connReader {
	cr := &connReader{nc: nc}
	cr.cond.L = &cr.mu
	return cr
}

func (cr *connReader) Read(p []byte) (int, error) {
	cr.mu.Lock()
	if cr.gone != nil {
		err := cr.gone
		cr.mu.Unlock()
		return 0, err
	}
	if cr.hasByte && len(p) > 0 {
		p[0], cr.hasByte = cr.b[0], false
		cr.mu.Unlock()
		return 1, nil
	}
	cr.mu.Unlock()
	return cr.nc.Read(p)
}

// background reads one byte until the client sends it, goes away, or
// stop ends the read; cancel is called when the client went away.
func (cr *connReader) background(cancel func(error)) {
	n, err := cr.nc.Read(cr.b[:])
	cr.mu.Lock()
	if n == 1 {
		cr.hasByte = true
	}
	var ne net.Error
	aborted := errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
	if err != nil && !aborted {
		cr.gone = err
	}
	cr.inRead = false
	cr.cond.Broadcast()
	cr.mu.Unlock()
	if err != nil && !aborted {
		cancel(err)
	}
}

// start begins the background read unless one runs or a byte is held;
// it clears the read deadline (the handler may run long).
func (cr *connReader) start(cancel func(error)) bool {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if cr.inRead || cr.hasByte || cr.gone != nil {
		return false
	}
	cr.inRead = true
	_ = cr.nc.SetReadDeadline(time.Time{})
	cr.cleared.Store(true)
	go cr.background(cancel)
	return true
}

// stop ends a background read and waits for it; true if one ran.
func (cr *connReader) stop() bool {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if !cr.inRead {
		return false
	}
	_ = cr.nc.SetReadDeadline(aLongTimeAgo)
	for cr.inRead {
		cr.cond.Wait()
	}
	return true
}
