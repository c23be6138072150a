package blobstore

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultReadTimeout is the default longest wait for the next bytes of an
// upload body.
const DefaultReadTimeout = 30 * time.Second

// ErrReadTimeout is returned (wrapped) by a [TimeoutReader] whose source
// sent nothing for its timeout.
var ErrReadTimeout = errors.New("upload body stalled")

// TimeoutReader reads an upload body with an idle timeout: a Read that
// gets no bytes for the timeout fails with ErrReadTimeout. The source is
// read by one helper goroutine that ends when the source returns (the
// server closing a stalled connection ends it); after a timeout the
// TimeoutReader only returns the error.
type TimeoutReader struct {
	timeout time.Duration
	ch      chan chunk
	req     chan []byte
	buf     []byte
	err     error
	read    int64
}

type chunk struct {
	n   int
	err error
}

// NewTimeoutReader wraps src; timeout 0 means DefaultReadTimeout.
func NewTimeoutReader(src io.Reader, timeout time.Duration) *TimeoutReader {
	if timeout <= 0 {
		timeout = DefaultReadTimeout
	}
	t := &TimeoutReader{timeout: timeout, ch: make(chan chunk, 1), req: make(chan []byte)}
	go func() {
		for p := range t.req {
			n, err := src.Read(p)
			t.ch <- chunk{n, err}
			if err != nil {
				return
			}
		}
	}()
	return t
}

// Read reads from the source, waiting at most the timeout for bytes.
func (t *TimeoutReader) Read(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// The helper reads into the reader's own buffer, so a read that times
	// out never writes into memory the caller owns; after a timeout the
	// buffer is abandoned.
	if t.buf == nil {
		t.buf = make([]byte, 64<<10)
	}
	buf := t.buf[:min(len(p), len(t.buf))]
	t.req <- buf
	timer := time.NewTimer(t.timeout)
	defer timer.Stop()
	select {
	case c := <-t.ch:
		n := copy(p, buf[:c.n])
		t.read += int64(n)
		if c.err != nil {
			t.err = c.err
			close(t.req)
		}
		return n, c.err
	case <-timer.C:
		t.err = fmt.Errorf("%w: no bytes for %v after %d bytes", ErrReadTimeout, t.timeout, t.read)
		close(t.req) // the helper ends once its read returns
		return 0, t.err
	}
}

// maxDrain bounds what DrainRefused reads.
const maxDrain = 64 << 20

// DrainRefused reads and discards up to 64 MiB of what is left of a
// refused upload (the store is full), so that a client still sending gets
// to read the error answer instead of a broken connection.
func DrainRefused(src io.Reader) {
	io.CopyN(io.Discard, src, maxDrain)
}

// Close stops the helper once its pending read (if any) ends.
func (t *TimeoutReader) Close() error {
	if t.err == nil {
		t.err = errors.New("blobstore: read after close")
		close(t.req)
	}
	return nil
}
