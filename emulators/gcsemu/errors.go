package gcsemu

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
)

// apiError is an error answer, written as XML (XML API) or JSON (JSON API).
type apiError struct {
	status int
	code   string // XML API code, e.g. NoSuchKey
	reason string // JSON API reason, e.g. notFound
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.msg) }

func errNoSuchBucket(b string) *apiError {
	return &apiError{http.StatusNotFound, "NoSuchBucket", "notFound", "The specified bucket does not exist: " + b}
}

func errNoSuchKey(b, o string) *apiError {
	return &apiError{http.StatusNotFound, "NoSuchKey", "notFound", fmt.Sprintf("No such object: %s/%s", b, o)}
}

func errPrecondition(what string) *apiError {
	return &apiError{http.StatusPreconditionFailed, "PreconditionFailed", "conditionNotMet", "At least one of the pre-conditions you specified did not hold: " + what}
}

func errBadRequest(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "InvalidArgument", "invalid", fmt.Sprintf(format, args...)}
}

func errAccessDenied(what string) *apiError {
	return &apiError{http.StatusForbidden, "AccessDenied", "forbidden", "Anonymous caller does not have " + what + " access."}
}

func errBadToken() *apiError {
	return &apiError{http.StatusUnauthorized, "AuthenticationRequired", "authError", "Invalid Credentials"}
}

func errMethod(m string) *apiError {
	return &apiError{http.StatusMethodNotAllowed, "MethodNotAllowed", "methodNotAllowed", "The specified method is not allowed against this resource: " + m}
}

func errNotFound(path string) *apiError {
	return &apiError{http.StatusNotFound, "NotFound", "notFound", "Not Found: " + path}
}

func asAPIError(err error) *apiError {
	if e, ok := err.(*apiError); ok {
		return e
	}
	return &apiError{http.StatusInternalServerError, "InternalError", "backendError", err.Error()}
}

func writeAuthHeaders(w http.ResponseWriter, e *apiError) {
	if e.code == "RequestTimeout" {
		// The rest of a stalled body may still come: no keep-alive.
		w.Header().Set("Connection", "close")
	}
	if e.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/"`)
	}
}

// writeXMLError writes e as the XML API does.
func writeXMLError(w http.ResponseWriter, r *http.Request, err error) {
	e := asAPIError(err)
	writeAuthHeaders(w, e)
	h := w.Header()
	h.Set("Content-Type", "application/xml; charset=UTF-8")
	h.Set("Cache-Control", "private, max-age=0")
	w.WriteHeader(e.status)
	if r.Method == http.MethodHead {
		return
	}
	body := struct {
		XMLName xml.Name `xml:"Error"`
		Code    string   `xml:"Code"`
		Message string   `xml:"Message"`
	}{Code: e.code, Message: e.msg}
	out, _ := xml.Marshal(body)
	w.Write([]byte(xml.Header))
	w.Write(out)
}

// writeJSONError writes e as the JSON API does.
func writeJSONError(w http.ResponseWriter, r *http.Request, err error) {
	e := asAPIError(err)
	writeAuthHeaders(w, e)
	type item struct {
		Domain  string `json:"domain"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	body := map[string]any{"error": map[string]any{
		"code":    e.status,
		"message": e.msg,
		"errors":  []item{{Domain: "global", Reason: e.reason, Message: e.msg}},
	}}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=UTF-8")
	h.Set("Cache-Control", "private, max-age=0")
	w.WriteHeader(e.status)
	if r.Method != http.MethodHead {
		json.NewEncoder(w).Encode(body)
	}
}
