package h1serve

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/edgeconform/edgeconform/reference/receive"
	"github.com/edgeconform/edgeconform/reference/requri"
)

// protoError is a request net/http would refuse before any handler: the
// server answers it itself and closes the connection.
type protoError struct {
	status int
	msg    string
}

func (e *protoError) Error() string { return fmt.Sprintf("%d %s", e.status, e.msg) }

func badRequest(format string, args ...any) *protoError {
	return &protoError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// errPreface is readHead's answer when the connection starts with the h2
// client preface (h2c with prior knowledge).
var errPreface = errors.New("h2 client preface")

// head is one request head as read: the raw text (one allocation, which
// every string of the request slices) and what the receive step counted.
type head struct {
	text   string
	reqEnd int // end of the request line (after its LF)
}

// readHead reads one request head from br into buf, applying the receive
// step's limits line by line as the old receive.Listener did on the raw
// bytes (414 for the request line, 431 for the fields, obs-fold): a
// *receive.Error is a refusal for the handler. started is called once the
// head's first bytes are in.
func readHead(br *bufio.Reader, buf []byte, lim receive.Limits, started func() bool) (head, []byte, error) {
	buf = buf[:0]
	line, reqEnd, fields := 0, -1, 0
	for {
		b, err := br.ReadSlice('\n')
		if len(buf) == 0 && len(b) > 0 && started != nil && !started() {
			return head{}, buf, errClosed
		}
		buf = append(buf, b...)
		if err == bufio.ErrBufferFull {
			if e := lineLimit(lim, len(buf)-line, reqEnd, len(buf)); e != nil {
				return head{}, buf, e
			}
			continue
		}
		if err != nil {
			return head{}, buf, err
		}
		l := buf[line:]
		if reqEnd < 0 {
			reqEnd = len(buf)
			if e := requestLineLimit(lim, l); e != nil {
				return head{}, buf, e
			}
			line = len(buf)
			continue
		}
		if e := lineLimit(lim, len(buf)-line, reqEnd, len(buf)); e != nil {
			return head{}, buf, e
		}
		line = len(buf)
		if len(l) == 1 || len(l) == 2 && l[0] == '\r' {
			return head{text: string(buf), reqEnd: reqEnd}, buf, nil
		}
		if l[0] == ' ' || l[0] == '\t' { // RFC 9112 5.2
			return head{}, buf, receive.ObsFold()
		}
		if fields++; fields > lim.MaxHeaderFields {
			return head{}, buf, lim.FieldsTooLarge(fields, 0)
		}
	}
}

// lineLimit checks a line being gathered: the request line (reqEnd < 0)
// against the target's bound, field lines against the header bytes.
func lineLimit(lim receive.Limits, lineLen, reqEnd, total int) error {
	if reqEnd < 0 {
		if e := lim.LineTooLong(lineLen); e != nil {
			return e
		}
		return nil
	}
	if e := lim.FieldsTooLarge(0, total-reqEnd); e != nil {
		return e
	}
	return nil
}

// requestLineLimit checks the complete request line's target length.
func requestLineLimit(lim receive.Limits, l []byte) error {
	s := string(trimEOL(l))
	sp1, sp2 := strings.IndexByte(s, ' '), strings.LastIndexByte(s, ' ')
	if sp1 >= 0 && sp2 > sp1 {
		if e := lim.TargetTooLong(sp2 - sp1 - 1); e != nil {
			return e
		}
	}
	return nil
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

func trimEOLString(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(s, "\r")
}

// parsed is a head turned into the parts of an *http.Request.
type parsed struct {
	method, target, proto string
	major, minor          int
	url                   *url.URL
	header                http.Header
	host                  string
	// The Host field lines: the first one's value and how many there
	// were. They never enter header (net/http deletes Host from it), so
	// a request whose only field is Host has an empty map (issue #14: an
	// insert that allocated and a delete per request).
	hostField     string
	hostFields    int
	contentLength int64 // -1: chunked
	chunked       bool
	close         bool
}

// parseHead parses h as net/http's server does (request line, fields,
// Host, framing), refusing what it refuses with the same statuses. The
// receive step's framing refusals (Content-Length with
// Transfer-Encoding, Transfer-Encoding on HTTP/1.0) come first, as they
// did when receive.Listener checked the raw bytes before net/http.
func parseHead(h head, p *parsed) error {
	*p = parsed{}
	if err := p.requestLine(trimEOLString(h.text[:h.reqEnd])); err != nil {
		return err
	}
	rest := h.text[h.reqEnd:]
	n := strings.Count(rest, "\n")
	p.header = make(http.Header, n)
	strs := make([]string, n)
	var first error
	cls, tes := 0, 0
	for i := 0; ; i++ {
		nl := strings.IndexByte(rest, '\n')
		line := trimEOLString(rest[:nl+1])
		rest = rest[nl+1:]
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !httpguts.ValidHeaderFieldName(name) {
			if first == nil {
				first = badRequest("malformed MIME header line: %q", clip(line))
			}
			continue
		}
		value = strings.Trim(value, " \t")
		if first == nil && !httpguts.ValidHeaderFieldValue(value) {
			first = badRequest("invalid header value for %q", clip(name))
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		switch key {
		case "Content-Length":
			cls++
		case "Transfer-Encoding":
			tes++
		case "Host":
			if p.hostFields == 0 {
				p.hostField = value
			}
			p.hostFields++
			continue
		}
		strs[i] = value
		if vs := p.header[key]; vs != nil {
			p.header[key] = append(vs, value)
		} else {
			p.header[key] = strs[i : i+1 : i+1]
		}
	}
	if e := receive.Framing(cls, tes, p.major == 1 && p.minor == 0); e != nil {
		return e
	}
	if first != nil {
		return first
	}
	if err := p.hostAndFraming(); err != nil {
		return err
	}
	return nil
}

// requestLine parses "METHOD SP target SP HTTP/x.y" (net/http's cuts).
func (p *parsed) requestLine(line string) error {
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 {
		return badRequest("malformed HTTP request %q", clip(line))
	}
	if method == "" || !validToken(method) {
		return badRequest("invalid method %q", clip(method))
	}
	major, minor, ok := http.ParseHTTPVersion(proto)
	if !ok {
		return badRequest("malformed HTTP version %q", clip(proto))
	}
	if major != 1 {
		return &protoError{status: http.StatusHTTPVersionNotSupported, msg: "HTTP Version Not Supported"}
	}
	raw := target
	justAuthority := method == http.MethodConnect && !strings.HasPrefix(raw, "/")
	if justAuthority {
		raw = "http://" + raw
	}
	u, err := requri.Parse(raw) // url.ParseRequestURI, faster for plain paths
	if err != nil {
		return badRequest("invalid request target %q", clip(target))
	}
	if justAuthority {
		u.Scheme = ""
	}
	p.method, p.target, p.proto, p.major, p.minor, p.url = method, target, proto, major, minor, u
	return nil
}

// hostAndFraming checks Host (RFC 9112 3.2) and the body's framing
// (RFC 9112 6), as net/http does, and sets Connection's meaning.
func (p *parsed) hostAndFraming() error {
	switch {
	case p.minor >= 1 && p.hostFields == 0 && p.method != http.MethodConnect:
		return badRequest("missing required Host header")
	case p.hostFields > 1:
		return badRequest("too many Host headers")
	case p.hostFields == 1 && !httpguts.ValidHostHeader(p.hostField):
		return badRequest("malformed Host header")
	}
	p.host = p.url.Host
	if p.host == "" && p.hostFields == 1 {
		p.host = p.hostField
	}
	if pragma, ok := p.header["Pragma"]; ok && len(pragma) > 0 && pragma[0] == "no-cache" {
		if _, ok := p.header["Cache-Control"]; !ok {
			p.header["Cache-Control"] = []string{"no-cache"}
		}
	}
	conn := p.header["Connection"]
	if p.minor == 0 {
		p.close = !hasToken(conn, "keep-alive")
	} else {
		p.close = hasToken(conn, "close")
	}
	if te, ok := p.header["Transfer-Encoding"]; ok && p.minor >= 1 {
		if len(te) != 1 || !strings.EqualFold(strings.Trim(te[0], " \t"), "chunked") {
			return &protoError{status: http.StatusNotImplemented, msg: "Unsupported transfer encoding"}
		}
		delete(p.header, "Transfer-Encoding")
		delete(p.header, "Content-Length")
		p.chunked, p.contentLength = true, -1
		return nil
	}
	return p.contentLen()
}

// contentLen parses Content-Length: repeated, it must repeat one value.
func (p *parsed) contentLen() error {
	cl := p.header["Content-Length"]
	if len(cl) == 0 {
		return nil
	}
	first := strings.Trim(cl[0], " \t")
	for _, v := range cl[1:] {
		if strings.Trim(v, " \t") != first {
			return badRequest("message cannot contain multiple Content-Length headers; got %q", cl)
		}
	}
	if len(cl) > 1 {
		p.header["Content-Length"] = []string{first}
	}
	n, err := strconv.ParseUint(first, 10, 63)
	if err != nil || first == "" || first[0] == '+' {
		return badRequest("bad Content-Length %q", clip(first))
	}
	p.contentLength = int64(n)
	return nil
}

// hasToken reports whether the comma-separated values hold token.
func hasToken(vs []string, token string) bool {
	for _, v := range vs {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.Trim(t, " \t"), token) {
				return true
			}
		}
	}
	return false
}

func validToken(s string) bool {
	for i := range len(s) {
		if !httpguts.IsTokenRune(rune(s[i])) {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
