package session

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/entry"
	"github.com/edgeconform/edgeconform/reference/cache/policy"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/outcome"
)

// object is a chunked object (RNG-2, RNG-3) as an io.ReadSeeker for
// http.ServeContent: each ChunkSize piece comes from the store if it holds
// that chunk of this version, else from a chunk fill, collapsed per chunk
// (COL-1) and streamed as it arrives (COL-5). Seeking does no I/O; reading
// a chunk that is of another version fails with ErrValidatorChanged
// (RNG-5).
type object struct {
	c     *Cache
	ctx   context.Context // the client's
	key   string
	m     entry.Meta
	up    Upstream         // where chunk fills go (their Range is set per chunk)
	id    string           // the request id chunk fills are logged with
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
	return min((idx+1)*entry.ChunkSize, o.m.Size) - idx*entry.ChunkSize
}

// prime opens the chunk holding byte off, so that its fill's failure (or a
// changed validator) is known before anything is sent.
func (o *object) prime(off int64) error {
	if off >= o.m.Size {
		return nil
	}
	o.off = off
	return o.open(off / entry.ChunkSize)
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
	idx := o.off / entry.ChunkSize
	if o.cur == nil || o.curIdx != idx || o.curPos != o.off {
		if err := o.open(idx); err != nil {
			return 0, err
		}
	}
	end := idx*entry.ChunkSize + o.chunkLen(idx)
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
	if skip := o.off - idx*entry.ChunkSize; skip > 0 {
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

// Size is the object's size.
func (o *object) Size() int64 { return o.m.Size }

// Streaming reports whether the chunk being read comes from a fill, not
// the store (the deliverer flushes each write then: COL-5).
func (o *object) Streaming() bool { return !o.stored.Load() }

// chunk returns a reader of chunk idx from its start.
func (o *object) chunk(idx int64) (io.ReadCloser, error) {
	key := entry.ChunkKey(o.key, idx)
	if !o.m.Transient {
		if rd, ok := o.c.store.Open(key); ok {
			if string(rd.Meta()) == o.m.Validator && rd.Size() == o.chunkLen(idx) {
				return rd, nil
			}
			rd.Close() // another version's chunk: refill it
		}
	}
	if o.fill != nil && idx == o.first {
		return o.fill.Body(), nil
	}
	cf := &chunkFill{c: o.c, key: o.key, m: o.m, idx: idx, up: o.up, id: o.id, keep: !o.m.Transient}
	res, _ := o.c.group.Do(o.ctx, o.fillKey(idx), cf.run)
	o.detach = res.Detach
	hv, err := res.Head(o.ctx)
	if err != nil {
		return nil, err
	}
	if v, _ := hv.(string); v != o.m.Validator { // RNG-5: never another version's bytes
		return nil, fmt.Errorf("chunk %d of %q: joined a fill of validator %q, want %q: %w", idx, o.key, v, o.m.Validator, ErrValidatorChanged)
	}
	return res.Body(), nil
}

// fillKey is the collapse key of chunk idx's fill. It holds the manifest's
// validator (RNG-5, issue #12): a response started on one version never
// joins a chunk fill of another, which may still be running after the
// object changed and a new manifest replaced the old one.
func (o *object) fillKey(idx int64) string {
	gkey := entry.ChunkKey(o.key, idx) + "\x00" + o.m.Validator
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
type chunkFill struct {
	c    *Cache
	key  string
	m    entry.Meta
	idx  int64
	up   Upstream
	id   string
	keep bool
}

// bounds are the chunk's first and last byte.
func (f *chunkFill) bounds() (first, last int64) {
	first = f.idx * entry.ChunkSize
	return first, min(first+entry.ChunkSize, f.m.Size) - 1
}

// run is the chunk fill's collapse.FillFunc.
func (f *chunkFill) run(ctx context.Context, fw *collapse.Fill) error {
	first, last := f.bounds()
	if f.keep { // a fill that ended after the caller looked may have stored it (COL-1)
		if rd, ok := f.c.store.Open(entry.ChunkKey(f.key, f.idx)); ok {
			defer rd.Close()
			if string(rd.Meta()) == f.m.Validator && rd.Size() == last-first+1 {
				if err := fw.Head(f.m.Validator); err != nil {
					return err
				}
				return f.c.pump(io.NewSectionReader(rd, 0, rd.Size()), fw, nil, -1)
			}
		}
	}
	h := fillHeader(f.up.Header())
	h.Set("Range", fmt.Sprintf("bytes=%d-%d", first, last))
	res := f.up.Fetch(ctx, h)
	if res.Response == nil { // ATT-8, ATT-9: the fill's 502/504 and reason
		return fillFailed(res, fmt.Sprintf("bytes %d-%d", first, last))
	}
	resp := res.Response
	defer resp.Body.Close()
	if err := f.check(resp); err != nil {
		return err
	}
	if err := fw.Head(f.m.Validator); err != nil { // what a joining reader checks (RNG-5)
		return err
	}
	var sw store.Writer
	if f.keep {
		sw = f.c.beginEntry(entry.ChunkKey(f.key, f.idx), []byte(f.m.Validator), last-first+1)
	}
	return f.c.pump(resp.Body, fw, sw, -1)
}

// check reports whether resp is the chunk asked for, of the manifest's
// version (RNG-5: a changed validator deletes the manifest).
func (f *chunkFill) check(resp *http.Response) error {
	first, last := f.bounds()
	if resp.StatusCode != http.StatusPartialContent && resp.StatusCode != http.StatusOK {
		return &FillError{Status: http.StatusBadGateway, Reason: outcome.HTTPProtocolError,
			Err: fmt.Errorf("filling bytes %d-%d: origin answered %d", first, last, resp.StatusCode)}
	}
	if got := entry.ValidatorOf(resp.Header); got != f.m.Validator {
		f.c.store.Delete(f.key)
		f.c.log.Info("fill: object changed between chunks (RNG-5)", "request_id", f.id, "key", f.key, "chunk", f.idx,
			"had", f.m.Validator, "got", got)
		return ErrValidatorChanged
	}
	rf, rl, total, ok := policy.ParseContentRange(resp.Header.Get("Content-Range"))
	if resp.StatusCode != http.StatusPartialContent || !ok || rf != first || rl != last || total != f.m.Size {
		return &FillError{Status: http.StatusBadGateway, Reason: outcome.HTTPProtocolError,
			Err: fmt.Errorf("filling bytes %d-%d of %d: origin answered %d with Content-Range %q",
				first, last, f.m.Size, resp.StatusCode, resp.Header.Get("Content-Range"))}
	}
	return nil
}
