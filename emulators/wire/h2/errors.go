package h2

import (
	"errors"
	"fmt"

	"golang.org/x/net/http2"
)

var (
	// errConnClosed ends streams when the connection ends.
	errConnClosed = errors.New("h2: connection closed")
	// errConnGoingAway fails writes once GOAWAY was sent or the connection
	// was aborted.
	errConnGoingAway = errors.New("h2: connection going away")
	// errStreamDone ends a stream whose handler returned.
	errStreamDone = errors.New("h2: stream done")
	// errBodyClosed is returned by Read on a request body after Close.
	errBodyClosed = errors.New("h2: read on closed request body")
)

// resetError is why a stream ended with RST_STREAM.
type resetError struct {
	code   http2.ErrCode
	remote bool // the client sent it
}

func (e resetError) Error() string {
	if e.remote {
		return fmt.Sprintf("h2: stream reset by client: %v", e.code)
	}
	return fmt.Sprintf("h2: stream reset: %v", e.code)
}

// connError is a connection error: GOAWAY with code, then close.
type connError struct {
	code http2.ErrCode
	why  string
}

func (e connError) Error() string { return fmt.Sprintf("%v: %s", e.code, e.why) }

// streamError is a stream error: RST_STREAM with code on stream id.
func streamError(id uint32, code http2.ErrCode, why string) error {
	return http2.StreamError{StreamID: id, Code: code, Cause: errors.New(why)}
}
