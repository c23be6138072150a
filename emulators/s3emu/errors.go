package s3emu

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
)

// s3Error is an error answered as S3 answers it: a status, a code, a
// message and any extra elements S3 adds for that code.
type s3Error struct {
	Status  int
	Code    string
	Message string
	Extra   []field // extra <Name>Value</Name> elements, in order
}

type field struct{ Name, Value string }

func (e *s3Error) Error() string { return e.Code + ": " + e.Message }

func newErr(status int, code, format string, args ...any) *s3Error {
	return &s3Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *s3Error) with(name, value string) *s3Error {
	e.Extra = append(e.Extra, field{name, value})
	return e
}

// Common errors.
func errAccessDenied() *s3Error { return newErr(http.StatusForbidden, "AccessDenied", "Access Denied") }

func errNoSuchBucket(bucket string) *s3Error {
	return newErr(http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist").with("BucketName", bucket)
}

func errNoSuchKey(key string) *s3Error {
	return newErr(http.StatusNotFound, "NoSuchKey", "The specified key does not exist.").with("Key", key)
}

func errNotImplemented(what string) *s3Error {
	return newErr(http.StatusNotImplemented, "NotImplemented", "A header or query you provided implies functionality that is not implemented: %s", what)
}

func errMalformedHeader(format string, args ...any) *s3Error {
	return newErr(http.StatusBadRequest, "AuthorizationHeaderMalformed", "The authorization header is malformed; "+format, args...)
}

func errMalformedQuery(format string, args ...any) *s3Error {
	return newErr(http.StatusBadRequest, "AuthorizationQueryParametersError", format, args...)
}

// writeError answers e with S3's XML error body (no body for HEAD).
func writeError(w http.ResponseWriter, r *http.Request, e *s3Error, resource, requestID string) {
	h := w.Header()
	for _, k := range []string{"Etag", "Last-Modified", "Content-Range", "Accept-Ranges", "Cache-Control", "Content-Encoding", "Content-Disposition", "Content-Language", "Expires"} {
		h.Del(k)
	}
	if e.Code == "InvalidRange" {
		for _, f := range e.Extra {
			if f.Name == "ActualObjectSize" {
				h.Set("Content-Range", "bytes */"+f.Value)
			}
		}
	}
	if r.Method == http.MethodHead {
		h.Del("Content-Type")
		w.WriteHeader(e.Status)
		return
	}
	h.Set("Content-Type", "application/xml")
	body := errorXML(e, resource, requestID)
	h.Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(e.Status)
	w.Write([]byte(body))
}

func errorXML(e *s3Error, resource, requestID string) string {
	var b strings.Builder
	b.WriteString(xml.Header)
	b.WriteString("<Error>")
	elem(&b, "Code", e.Code)
	elem(&b, "Message", e.Message)
	for _, f := range e.Extra {
		elem(&b, f.Name, f.Value)
	}
	if resource != "" {
		elem(&b, "Resource", resource)
	}
	elem(&b, "RequestId", requestID)
	elem(&b, "HostId", hostID(requestID))
	b.WriteString("</Error>")
	return b.String()
}

func elem(b *strings.Builder, name, value string) {
	b.WriteString("<" + name + ">")
	// Like S3, newlines stay literal so a canonical request reads as one.
	for i, line := range strings.Split(value, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		xml.EscapeText(b, []byte(line))
	}
	b.WriteString("</" + name + ">")
}

// writeXML answers 200 with v marshalled as the body.
func writeXML(w http.ResponseWriter, r *http.Request, v any) {
	out, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	body := append([]byte(xml.Header), out...)
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}
