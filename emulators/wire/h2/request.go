package h2

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http2"

	"github.com/edgeconform/edgeconform/emulators/wire"
)

// pseudo holds a request's pseudo-header fields.
type pseudo struct {
	method, scheme, authority, path, protocol string
}

// newRequest builds the request for a new stream from its header block. The
// body, if any, is attached by the caller.
func (c *conn) newRequest(ctx context.Context, f *http2.MetaHeadersFrame) (*wire.Request, error) {
	fields := make([]wire.HeaderField, 0, len(f.Fields))
	header := make(http.Header, len(f.Fields))
	var p pseudo
	for _, hf := range f.Fields {
		fields = append(fields, wire.HeaderField{Name: hf.Name, Value: hf.Value})
		if hf.IsPseudo() {
			p.set(hf.Name, hf.Value)
			continue
		}
		if err := checkRequestField(hf.Name, hf.Value); err != nil {
			return nil, err
		}
		key := http.CanonicalHeaderKey(hf.Name)
		header[key] = append(header[key], hf.Value)
	}
	u, requestURI, err := requestURL(p)
	if err != nil {
		return nil, err
	}
	host := p.authority
	if host == "" {
		host = header.Get("Host")
	}
	req := &http.Request{
		Method:        p.method,
		URL:           u,
		Proto:         "HTTP/2.0",
		ProtoMajor:    2,
		Header:        header,
		Body:          http.NoBody,
		ContentLength: 0,
		Host:          host,
		RemoteAddr:    addrString(c.info.Peer, c.nc),
		RequestURI:    requestURI,
		TLS:           c.tlsState,
		Trailer:       declaredTrailer(header),
	}
	if !f.StreamEnded() {
		req.ContentLength = contentLength(header)
	}
	return &wire.Request{
		Request:  req.WithContext(ctx),
		Fields:   fields,
		Conn:     c.info,
		StreamID: f.StreamID,
	}, nil
}

func (p *pseudo) set(name, value string) {
	switch name {
	case ":method":
		p.method = value
	case ":scheme":
		p.scheme = value
	case ":authority":
		p.authority = value
	case ":path":
		p.path = value
	case ":protocol":
		p.protocol = value
	}
}

// checkRequestField rejects the connection-specific fields HTTP/2 forbids
// (RFC 9113, 8.2.2).
func checkRequestField(name, value string) error {
	switch {
	case isConnectionSpecific(name):
		return fmt.Errorf("connection-specific header field %q", name)
	case name == "te" && value != "trailers":
		return fmt.Errorf("te header field %q", value)
	}
	return nil
}

// requestURL checks the pseudo-header fields and builds the request URL and
// RequestURI from them.
func requestURL(p pseudo) (*url.URL, string, error) {
	if p.method == "" {
		return nil, "", errors.New("missing :method")
	}
	if p.method == http.MethodConnect && p.protocol == "" {
		if p.authority == "" || p.path != "" || p.scheme != "" {
			return nil, "", errors.New("malformed CONNECT pseudo-header fields")
		}
		return &url.URL{Host: p.authority}, p.authority, nil
	}
	if p.path == "" || p.scheme == "" {
		return nil, "", errors.New("missing :path or :scheme")
	}
	u, err := url.ParseRequestURI(p.path)
	if err != nil {
		return nil, "", fmt.Errorf("bad :path: %w", err)
	}
	u.Scheme = p.scheme
	u.Host = p.authority
	return u, p.path, nil
}

// contentLength is the declared body length, -1 when absent or invalid.
func contentLength(h http.Header) int64 {
	vv := h["Content-Length"]
	if len(vv) != 1 {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(vv[0]), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// declaredTrailer is the Trailer map with the keys the Trailer header field
// announces, nil when it announces none.
func declaredTrailer(h http.Header) http.Header {
	var t http.Header
	for _, v := range h["Trailer"] {
		for _, key := range strings.Split(v, ",") {
			key = http.CanonicalHeaderKey(strings.TrimSpace(key))
			if key == "" {
				continue
			}
			if t == nil {
				t = make(http.Header)
			}
			t[key] = nil
		}
	}
	return t
}
