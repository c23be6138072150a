package h1serve

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"
)

// pendSize bounds what one background read takes: most request heads fit.
const pendSize = 1 << 10

// connReader sits under the connection's bufio.Reader. While a handler
// waits on its request's context, one background read (start) looks for
// the client going away. It is not stopped when the request ends: it
// becomes the wait for the connection's next request, and what it reads
// is kept for the next Read (issue #14: stopping it cost two deadline
// changes, a wake-up and one more read per proxied request).
type connReader struct {
	nc net.Conn

	mu       sync.Mutex
	cond     sync.Cond
	inRead   bool
	watching bool   // a request is being served: the read watches for its client leaving
	pend     []byte // what the background read read, not yet Read
	pbuf     []byte // the background read's buffer (pendSize), made at the first
	err      error  // the background read's error, for the next Read
}

func newConnReader(nc net.Conn) *connReader {
	cr := &connReader{nc: nc}
	cr.cond.L = &cr.mu
	return cr
}

func (cr *connReader) Read(p []byte) (int, error) {
	cr.mu.Lock()
	for cr.inRead {
		cr.cond.Wait() // the background read waits for the next request
	}
	switch {
	case len(cr.pend) > 0 && len(p) > 0:
		n := copy(p, cr.pend)
		cr.pend = cr.pend[n:]
		cr.mu.Unlock()
		return n, nil
	case cr.err != nil:
		err := cr.err
		cr.mu.Unlock()
		return 0, err
	}
	cr.mu.Unlock()
	return cr.nc.Read(p)
}

// background reads until the client sends something, goes away, or the
// read deadline passes; cancel is called when the client left while a
// request was being served. A deadline passing while one is still served
// (the head's deadline, set before) clears it and reads on (the handler
// may run long); one passing after it is the next head's timeout.
func (cr *connReader) background(cancel func(error)) {
	for {
		n, err := cr.nc.Read(cr.pbuf)
		cr.mu.Lock()
		if n == 0 && isTimeout(err) && cr.watching {
			_ = cr.nc.SetReadDeadline(time.Time{})
			cr.mu.Unlock()
			continue
		}
		cr.pend = cr.pbuf[:n]
		cr.err = err
		served := cr.watching
		cr.inRead = false
		cr.cond.Broadcast()
		cr.mu.Unlock()
		if err != nil && served {
			cancel(err)
		}
		return
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// start begins the background read for the request being served, unless
// one runs, read bytes are held or the client left.
func (cr *connReader) start(cancel func(error)) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	if cr.inRead || len(cr.pend) > 0 || cr.err != nil {
		return
	}
	if cr.pbuf == nil {
		cr.pbuf = make([]byte, pendSize)
	}
	cr.inRead, cr.watching = true, true
	go cr.background(cancel)
}

// holding reports whether the next Read is already decided without a
// read of its own: the background read runs, or holds bytes or an error.
func (cr *connReader) holding() bool {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.inRead || len(cr.pend) > 0 || cr.err != nil
}

// served marks the request's end: a background read still running waits
// for the next request from now on. (If it cleared the read deadline, the
// one set had passed: the next wait sets a new one.)
func (cr *connReader) served() {
	cr.mu.Lock()
	cr.watching = false
	cr.mu.Unlock()
}
