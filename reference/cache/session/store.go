package session

import (
	"io"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
	"github.com/edgeconform/edgeconform/reference/cache/entry"
	"github.com/edgeconform/edgeconform/reference/cache/store"
)

// restore re-commits a revalidated entry with its refreshed metadata (a
// chunked manifest has no body; a whole object's body is the stored
// entry's, shared or copied, if it is still the same version: CCH-4).
func (c *Cache) restore(key string, stale *entry.Meta, m entry.Meta) {
	if m.Chunked {
		if w := c.beginEntry(key, entry.Encode(m), 0); w != nil {
			_ = w.Commit()
		}
		return
	}
	rd, ok := c.store.Open(key)
	if !ok {
		return
	}
	defer rd.Close()
	cur, err := entry.Decode(rd)
	if err != nil || cur.Validator != stale.Validator || !cur.RespTime.Equal(stale.RespTime) {
		return // replaced meanwhile
	}
	w := c.beginEntry(key, entry.Encode(m), rd.Size())
	if w == nil {
		return
	}
	if err := copyBody(w, rd); err != nil {
		w.Abort()
		return
	}
	_ = w.Commit()
}

// copyBody writes rd's body to w: the stored bytes themselves where the
// store can share them (store.Bodied, store.Adopt: a revalidated entry
// costs no copy of its body, issue #14), else a copy.
func copyBody(w store.Writer, rd store.Reader) error {
	b, ok := rd.(store.Bodied)
	if !ok {
		_, err := io.Copy(w, io.NewSectionReader(rd, 0, rd.Size()))
		return err
	}
	for _, p := range b.Body() {
		if _, err := store.Adopt(w, p); err != nil {
			return err
		}
	}
	return nil
}

// beginEntry starts a store entry, or returns nil if the store refuses.
func (c *Cache) beginEntry(key string, meta []byte, size int64) store.Writer {
	w, err := c.store.Begin(key)
	if err != nil {
		return nil
	}
	w.SetMeta(meta)
	if size >= 0 {
		w.SetSize(size)
	}
	return w
}

// pump streams body into the fill and, while it stays within limit bytes
// (limit < 0: any), into sw (nil: not stored), committing sw only when the
// body completed (COL-7: a truncated body is never stored). The store gets
// the fill's own buffers (collapse.Fill.Bytes, store.Adopt), each whole
// one as soon as it is full and the rest at the end, so that a memory
// store keeps the fill's bytes rather than a second copy of them (issue
// #14).
func (c *Cache) pump(body io.Reader, fw *collapse.Fill, sw store.Writer, limit int64) error {
	if sw != nil {
		defer func() {
			if sw != nil {
				sw.Abort()
			}
		}()
	}
	buf := c.buffer()
	defer c.bufs.Put(buf)
	var n, stored int64 // bytes read; bytes handed to sw
	var views [][]byte
	keep := func(to int64) bool { // hands sw the bytes [stored, to)
		views = fw.Bytes(views[:0], stored, to)
		for _, v := range views {
			if _, err := store.Adopt(sw, v); err != nil {
				return false
			}
			stored += int64(len(v))
		}
		return stored == to
	}
	for {
		m, rerr := body.Read(*buf)
		if m > 0 {
			if _, err := fw.Write((*buf)[:m]); err != nil {
				return err
			}
			n += int64(m)
			if sw != nil {
				switch {
				case limit >= 0 && n > limit:
					sw.Abort()
					sw = nil
				case n-stored >= collapse.ChunkSize && !keep(n-n%collapse.ChunkSize):
					sw.Abort()
					sw = nil
				}
			}
		}
		if rerr == io.EOF {
			if sw != nil && keep(n) {
				_ = sw.Commit() // a failed Commit only means "not stored"
				sw = nil
			}
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
