package h2

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"golang.org/x/net/http2"
)

// readFrames is the connection's only reader: it reads frames and
// dispatches them until the connection fails or goes away, then drains.
// It never blocks on writing.
func (c *conn) readFrames() {
	for !c.isGoingAway() {
		f, err := c.fr.ReadFrame()
		if err == nil {
			err = c.processFrame(f)
		}
		if err != nil && !c.handleError(err) {
			return
		}
	}
	c.drain()
}

// handleError deals with an error from reading or processing a frame and
// reports whether reading should go on.
func (c *conn) handleError(err error) bool {
	var (
		se http2.StreamError
		ce connError
		fc http2.ConnectionError
	)
	switch {
	case errors.As(err, &se):
		c.resetStreamID(se)
	case errors.As(err, &ce):
		_ = c.protocolError(ce.code, ce.why)
	case errors.As(err, &fc):
		why := "framing"
		if d := c.fr.ErrorDetail(); d != nil {
			why = d.Error()
		}
		_ = c.protocolError(http2.ErrCode(fc), why)
	case errors.Is(err, http2.ErrFrameTooLarge):
		_ = c.protocolError(http2.ErrCodeFrameSize, "frame too large")
	default:
		c.setReason(readReason(err))
		return false
	}
	return true
}

// processFrame handles one frame from the client.
func (c *conn) processFrame(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.SettingsFrame:
		return c.processSettings(f)
	case *http2.MetaHeadersFrame:
		return c.processHeaders(f)
	case *http2.DataFrame:
		return c.processData(f)
	case *http2.WindowUpdateFrame:
		return c.processWindowUpdate(f)
	case *http2.PingFrame:
		return c.processPing(f)
	case *http2.RSTStreamFrame:
		return c.processRSTStream(f)
	case *http2.GoAwayFrame:
		return c.processGoAway(f)
	case *http2.PushPromiseFrame:
		return connError{http2.ErrCodeProtocol, "PUSH_PROMISE from client"}
	}
	// PRIORITY, PRIORITY_UPDATE and unknown frame types are ignored;
	// CONTINUATION is consumed by ReadMetaHeaders.
	return nil
}

// processSettings applies the client's SETTINGS and acknowledges them.
func (c *conn) processSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	var tableSize *uint32
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingInitialWindowSize:
			return c.setPeerInitialWindow(s.Val)
		case http2.SettingMaxFrameSize:
			c.mu.Lock()
			c.peerMaxFrame = s.Val
			c.mu.Unlock()
		case http2.SettingHeaderTableSize:
			v := s.Val
			tableSize = &v
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.w.enqueue(control{write: func(fr *http2.Framer) error {
		if tableSize != nil {
			c.w.setHeaderTableSizeLocked(*tableSize)
		}
		return fr.WriteSettingsAck()
	}})
	return nil
}

// processHeaders opens a stream or takes a stream's trailers.
func (c *conn) processHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if id%2 == 0 {
		return connError{http2.ErrCodeProtocol, fmt.Sprintf("HEADERS on even stream %d", id)}
	}
	c.mu.Lock()
	st := c.streams[id]
	known := id <= c.maxStreamID
	c.mu.Unlock()
	switch {
	case st != nil:
		return c.processTrailers(st, f)
	case known && len(f.PseudoFields()) > 0:
		return connError{http2.ErrCodeProtocol, fmt.Sprintf("new request on used stream id %d", id)}
	case known:
		// Trailers for a stream we already closed (say, reset while
		// the client sent them): ignore.
		return nil
	}
	return c.openStream(f)
}

// processTrailers ends a request body with trailers.
func (c *conn) processTrailers(st *stream, f *http2.MetaHeadersFrame) error {
	c.mu.Lock()
	ended := st.remoteEnded
	c.mu.Unlock()
	switch {
	case ended:
		return streamError(st.id, http2.ErrCodeStreamClosed, "HEADERS after END_STREAM")
	case !f.StreamEnded():
		return streamError(st.id, http2.ErrCodeProtocol, "trailers without END_STREAM")
	case len(f.PseudoFields()) > 0:
		return streamError(st.id, http2.ErrCodeProtocol, "pseudo-header field in trailers")
	}
	trailer := make(http.Header)
	for _, hf := range f.RegularFields() {
		key := http.CanonicalHeaderKey(hf.Name)
		trailer[key] = append(trailer[key], hf.Value)
	}
	return c.endRemote(st, trailer)
}

// endRemote handles END_STREAM from the client.
func (c *conn) endRemote(st *stream, trailer http.Header) error {
	if st.declared >= 0 && st.received != st.declared {
		return streamError(st.id, http2.ErrCodeProtocol,
			fmt.Sprintf("request body is %d bytes, content-length %d", st.received, st.declared))
	}
	c.mu.Lock()
	st.remoteEnded = true
	c.mu.Unlock()
	st.body.end(io.EOF, trailer)
	return nil
}

// processData feeds a DATA frame to its stream's request body.
func (c *conn) processData(f *http2.DataFrame) error {
	flowLen := int64(f.Length)
	if err := c.in.take(flowLen); err != nil {
		return err
	}
	c.giveConnWindow(flowLen)

	c.mu.Lock()
	st := c.streams[f.StreamID]
	idle := f.StreamID > c.maxStreamID
	ended := st != nil && st.remoteEnded
	c.mu.Unlock()
	switch {
	case st == nil && idle:
		return connError{http2.ErrCodeProtocol, fmt.Sprintf("DATA on idle stream %d", f.StreamID)}
	case st == nil:
		return nil // closed by us; the client had not seen it yet
	case ended:
		return streamError(st.id, http2.ErrCodeStreamClosed, "DATA after END_STREAM")
	}

	data := f.Data()
	st.received += int64(len(data))
	if st.declared >= 0 && st.received > st.declared {
		return streamError(st.id, http2.ErrCodeProtocol, "request body longer than content-length")
	}
	incr, err := st.body.receive(st.id, data, flowLen)
	if err != nil {
		return err
	}
	if f.StreamEnded() {
		return c.endRemote(st, nil)
	}
	if incr > 0 {
		c.w.enqueue(control{write: func(fr *http2.Framer) error { return fr.WriteWindowUpdate(st.id, incr) }})
	}
	return nil
}

// giveConnWindow returns received bytes to the connection window.
func (c *conn) giveConnWindow(n int64) {
	if incr := c.in.give(n); incr > 0 {
		c.w.enqueue(control{write: func(fr *http2.Framer) error { return fr.WriteWindowUpdate(0, incr) }})
	}
}

// processWindowUpdate grows a send window.
func (c *conn) processWindowUpdate(f *http2.WindowUpdateFrame) error {
	if f.StreamID == 0 {
		return c.addSendWindow(nil, f.Increment)
	}
	c.mu.Lock()
	st := c.streams[f.StreamID]
	idle := f.StreamID > c.maxStreamID
	c.mu.Unlock()
	switch {
	case st != nil:
		return c.addSendWindow(st, f.Increment)
	case idle:
		return connError{http2.ErrCodeProtocol, fmt.Sprintf("WINDOW_UPDATE on idle stream %d", f.StreamID)}
	}
	return nil
}

// processPing answers a PING.
func (c *conn) processPing(f *http2.PingFrame) error {
	if f.IsAck() {
		return nil
	}
	data := f.Data
	c.w.enqueue(control{write: func(fr *http2.Framer) error { return fr.WritePing(true, data) }})
	return nil
}

// processRSTStream ends a stream the client reset: its request context is
// cancelled and its writes fail.
func (c *conn) processRSTStream(f *http2.RSTStreamFrame) error {
	c.mu.Lock()
	st := c.streams[f.StreamID]
	idle := f.StreamID > c.maxStreamID
	c.mu.Unlock()
	switch {
	case st != nil:
		c.closeStream(st, resetError{code: f.ErrCode, remote: true})
	case idle:
		return connError{http2.ErrCodeProtocol, fmt.Sprintf("RST_STREAM on idle stream %d", f.StreamID)}
	}
	return nil
}

// processGoAway handles GOAWAY from the client: no new streams come; the
// connection is closed once the open ones are done (at once when the code
// is an error).
func (c *conn) processGoAway(f *http2.GoAwayFrame) error {
	reason := fmt.Sprintf("client goaway %v", f.ErrCode)
	c.mu.Lock()
	c.peerGoAway = reason
	idle := len(c.streams) == 0
	c.mu.Unlock()
	if idle || f.ErrCode != http2.ErrCodeNo {
		c.setReason(reason)
		_ = c.nc.Close()
	}
	return nil
}
