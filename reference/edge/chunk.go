package edge

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/policy"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/outcome"
)

// object is a chunked object (RNG-2, RNG-3) as an io.ReadSeeker for
// http.ServeContent: each ChunkSize piece comes from the store if it holds
// that chunk of this version, else from a chunk fill, collapsed per chunk
// (COL-1) and streamed as it arrives (COL-5). Seeking does no I/O; reading
// a chunk that is of another version fails with errValidatorChanged
// (RNG-5).
type object struct {
	s     *Server
	ctx   context.Context // the client's
	key   string
	m     entryMeta
	up    *upstreamReq     // what chunk fills send (their Range is set per chunk)
	fill  *collapse.Result // a fill whose body is chunk first, or nil
	first int64
	// private, when set, keeps this object's chunk fills to itself (an
	// object without a validator).
	private string

	off    int64         // the next byte Read returns
	cur    io.ReadCloser // reads chunk curIdx from curPos
	curIdx int64
	curPos int64
	// stored: cur reads the store, not a fill. Atomic: http.ServeContent
	// reads a multipart answer's parts in a goroutine of its own while the
	// writer asks Streaming.
	stored atomic.Bool
	detach func() // ends this request's attachment to cur's chunk fill, if any
}

func (o *object) chunkLen(idx int64) int64 {
	return min((idx+1)*ChunkSize, o.m.Size) - idx*ChunkSize
}

// prime opens the chunk holding byte off, so that its fill's failure (or a
// changed validator) is known before anything is sent.
func (o *object) prime(off int64) error {
	if off >= o.m.Size {
		return nil
	}
	o.off = off
	return o.open(off / ChunkSize)
}

// Seek implements io.Seeker.
func (o *object) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += o.off
	case io.SeekEnd:
		offset += o.m.Size
	default:
		return 0, fmt.Errorf("object seek: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("object seek: negative offset %d", offset)
	}
	o.off = offset
	return offset, nil
}

// Read implements io.Reader. A chunk that ends short is an error, never
// io.EOF.
func (o *object) Read(p []byte) (int, error) {
	if o.off >= o.m.Size {
		return 0, io.EOF
	}
	idx := o.off / ChunkSize
	if o.cur == nil || o.curIdx != idx || o.curPos != o.off {
		if err := o.open(idx); err != nil {
			return 0, err
		}
	}
	end := idx*ChunkSize + o.chunkLen(idx)
	if int64(len(p)) > end-o.off {
		p = p[:end-o.off]
	}
	n, err := o.cur.Read(p)
	o.off += int64(n)
	o.curPos += int64(n)
	if err == io.EOF {
		if o.off < end {
			return n, fmt.Errorf("chunk %d of %q ended at byte %d of %d: %w", idx, o.key, o.off, end, io.ErrUnexpectedEOF)
		}
		err = nil
	}
	return n, err
}

// open makes cur read chunk idx from o.off.
func (o *object) open(idx int64) error {
	o.Close()
	rd, err := o.chunk(idx)
	if err != nil {
		return err
	}
	if skip := o.off - idx*ChunkSize; skip > 0 {
		if sk, ok := rd.(io.Seeker); ok {
			_, err = sk.Seek(skip, io.SeekStart)
		} else {
			_, err = io.CopyN(io.Discard, rd, skip)
		}
		if err != nil {
			rd.Close()
			return fmt.Errorf("skipping to byte %d of chunk %d: %w", skip, idx, err)
		}
	}
	_, stored := rd.(store.Reader)
	o.cur, o.curIdx, o.curPos = rd, idx, o.off
	o.stored.Store(stored)
	return nil
}

// Streaming implements streaming: the chunk being read comes from a fill,
// not the store.
func (o *object) Streaming() bool { return !o.stored.Load() }

// chunk returns a reader of chunk idx from its start.
func (o *object) chunk(idx int64) (io.ReadCloser, error) {
	key := chunkKey(o.key, idx)
	if !o.m.transient {
		if rd, ok := o.s.store.Open(key); ok {
			if string(rd.Meta()) == o.m.Validator && rd.Size() == o.chunkLen(idx) {
				return rd, nil
			}
			rd.Close() // another version's chunk: refill it
		}
	}
	if o.fill != nil && idx == o.first {
		return o.fill.Body(), nil
	}
	res, _ := o.s.group.Do(o.ctx, o.fillKey(idx), o.s.chunkFill(o.key, o.m, idx, o.up, !o.m.transient))
	o.detach = res.Detach
	hv, err := res.Head(o.ctx)
	if err != nil {
		return nil, err
	}
	if v, _ := hv.(string); v != o.m.Validator { // RNG-5: never another version's bytes
		return nil, fmt.Errorf("chunk %d of %q: joined a fill of validator %q, want %q: %w", idx, o.key, v, o.m.Validator, errValidatorChanged)
	}
	return res.Body(), nil
}

// fillKey is the collapse key of chunk idx's fill. It holds the manifest's
// validator (RNG-5, issue #12): a response started on one version never
// joins a chunk fill of another, which may still be running after the
// object changed and a new manifest replaced the old one.
func (o *object) fillKey(idx int64) string {
	gkey := chunkKey(o.key, idx) + "\x00" + o.m.Validator
	if o.private != "" {
		gkey += "\x00" + o.private
	}
	return gkey
}

// Close releases the chunk being read and its fill.
func (o *object) Close() error {
	if o.cur != nil {
		o.cur.Close()
		o.cur = nil
		o.stored.Store(false)
	}
	if o.detach != nil {
		o.detach()
		o.detach = nil
	}
	return nil
}

// chunkFill fetches chunk idx of the object m describes with a range
// request (RNG-2), checks that it is the range asked for and of the same
// version (RNG-5: if not, the manifest is deleted so the next request
// refetches the object), and streams it into the Group and, if keep, the
// store. Its head is the validator it was checked against.
func (s *Server) chunkFill(key string, m entryMeta, idx int64, up *upstreamReq, keep bool) collapse.FillFunc {
	return func(ctx context.Context, fw *collapse.Fill) error {
		first := idx * ChunkSize
		last := min(first+ChunkSize, m.Size) - 1
		if keep { // a fill that ended after the caller looked may have stored it (COL-1)
			if rd, ok := s.store.Open(chunkKey(key, idx)); ok {
				defer rd.Close()
				if string(rd.Meta()) == m.Validator && rd.Size() == last-first+1 {
					if err := fw.Head(m.Validator); err != nil {
						return err
					}
					return s.pump(io.NewSectionReader(rd, 0, rd.Size()), fw, nil, -1)
				}
			}
		}
		u := up.fill(up.id())
		u.setHeader("Range", fmt.Sprintf("bytes=%d-%d", first, last))
		res := s.fetchUpstream(ctx, u)
		if res.Response == nil { // ATT-8, ATT-9: the fill's 502/504 and reason
			return fillFailed(res, fmt.Sprintf("bytes %d-%d", first, last))
		}
		resp := res.Response
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusPartialContent && resp.StatusCode != http.StatusOK {
			return &fillError{status: http.StatusBadGateway, reason: outcome.HTTPProtocolError,
				err: fmt.Errorf("filling bytes %d-%d: origin answered %d", first, last, resp.StatusCode)}
		}
		if validatorOf(resp.Header) != m.Validator {
			s.store.Delete(key)
			s.log.Info("fill: object changed between chunks (RNG-5)", "request_id", u.id(), "key", key, "chunk", idx,
				"had", m.Validator, "got", validatorOf(resp.Header))
			return errValidatorChanged
		}
		f, l, total, ok := policy.ParseContentRange(resp.Header.Get("Content-Range"))
		if resp.StatusCode != http.StatusPartialContent || !ok || f != first || l != last || total != m.Size {
			return &fillError{status: http.StatusBadGateway, reason: outcome.HTTPProtocolError,
				err: fmt.Errorf("filling bytes %d-%d of %d: origin answered %d with Content-Range %q",
					first, last, m.Size, resp.StatusCode, resp.Header.Get("Content-Range"))}
		}
		if err := fw.Head(m.Validator); err != nil { // what a joining reader checks (RNG-5)
			return err
		}
		var sw store.Writer
		if keep {
			sw = s.beginEntry(chunkKey(key, idx), []byte(m.Validator), last-first+1)
		}
		return s.pump(resp.Body, fw, sw, -1)
	}
}
