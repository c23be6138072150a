package session

import (
	"errors"
	"fmt"
	"io"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
)

// fillSeeker reads a running fill's body of known size as an
// io.ReadSeeker for http.ServeContent: seeking is free, reading forward
// skips, reading backward starts a new reader of the fill.
type fillSeeker struct {
	res      *collapse.Result
	size     int64
	off, pos int64
	rd       io.ReadCloser
}

func (f *fillSeeker) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.size
	}
	if offset < 0 {
		return 0, fmt.Errorf("fill seek: negative offset %d", offset)
	}
	f.off = offset
	return offset, nil
}

func (f *fillSeeker) Read(p []byte) (int, error) {
	if f.off >= f.size {
		return 0, io.EOF
	}
	if f.rd == nil || f.pos > f.off {
		f.Close()
		f.rd, f.pos = f.res.Body(), 0
	}
	if f.pos < f.off {
		n, err := io.CopyN(io.Discard, f.rd, f.off-f.pos)
		f.pos += n
		if err != nil {
			return 0, fmt.Errorf("skipping to byte %d of the fill: %w", f.off, err)
		}
	}
	if int64(len(p)) > f.size-f.off {
		p = p[:f.size-f.off]
	}
	n, err := f.rd.Read(p)
	f.pos += int64(n)
	f.off += int64(n)
	if err == io.EOF && f.off < f.size {
		err = fmt.Errorf("the fill ended at byte %d of %d: %w", f.off, f.size, io.ErrUnexpectedEOF)
	}
	return n, err
}

// Size is the body's size.
func (f *fillSeeker) Size() int64 { return f.size }

// Streaming reports whether the fill is still running (the deliverer
// flushes each write then: COL-5).
func (f *fillSeeker) Streaming() bool {
	select {
	case <-f.res.Done():
		return false
	default:
		return true
	}
}

func (f *fillSeeker) Close() error {
	if f.rd != nil {
		f.rd.Close()
		f.rd = nil
	}
	return nil
}

// errNoSeek is a stream asked to seek.
var errNoSeek = errors.New("a fill's body as it arrives cannot seek")

// stream is a fill's body of unknown size as it arrives (a Live answer):
// it reads forward only; Seek reports the offset and moves nowhere else.
type stream struct {
	io.ReadCloser
	off int64
}

func (s *stream) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	s.off += int64(n)
	return n, err
}

func (s *stream) Seek(offset int64, whence int) (int64, error) {
	if (whence == io.SeekCurrent && offset == 0) || (whence == io.SeekStart && offset == s.off) {
		return s.off, nil
	}
	return s.off, errNoSeek
}

// Streaming: a fill's body as it arrives is always flushed (COL-5).
func (s *stream) Streaming() bool { return true }
