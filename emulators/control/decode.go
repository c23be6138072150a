package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// decodeList decodes body as one T or a JSON array of them, rejecting
// unknown fields. prefix names the i-th of n items in field paths.
func decodeList[T any](body []byte, what string, prefix func(i, n int) string) ([]T, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, badField("body", "is empty: want a %s object or an array of them", what)
	}
	if err := checkSyntax(body); err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if body[0] == '[' {
		if err := json.Unmarshal(body, &raws); err != nil {
			return nil, badField("body", "%v", err)
		}
	} else {
		raws = []json.RawMessage{body}
	}
	out := make([]T, len(raws))
	var fields rules.Errors
	for i, raw := range raws {
		p := prefix(i, len(raws))
		if string(bytes.TrimSpace(raw)) == "null" {
			// Decoding null would leave the zero value: a rule that
			// matches everything, an object without a path.
			fields = append(fields, rules.FieldError{Field: orBody(p), Problem: fmt.Sprintf("is null: want a %s object", what)})
			continue
		}
		if es := fielderr.CheckJSON(raw, reflect.TypeFor[T](), p, "body"); len(es) > 0 {
			fields = append(fields, es...)
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			fields = append(fields, rules.FieldError{Field: orBody(p), Problem: err.Error()})
		}
	}
	if len(fields) > 0 {
		return nil, &apiError{status: http.StatusBadRequest, body: ErrorResponse{
			Error: fmt.Sprintf("malformed %s, nothing changed: %v", what, fields), Fields: fields}}
	}
	return out, nil
}

func orBody(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// checkSyntax reports malformed JSON with where it is.
func checkSyntax(body []byte) error {
	if json.Valid(body) {
		return nil
	}
	var v any
	err := json.Unmarshal(body, &v)
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return badField("body", "malformed JSON at byte %d: %v", se.Offset, se)
	}
	if err == nil {
		err = errors.New("not valid JSON")
	}
	return badField("body", "malformed JSON: %v", err)
}

// queryParams are the journal query's parameters.
var queryParams = []string{"listener", "pathPrefix", "method", "after", "limit"}

// onlyParams rejects query parameters other than allowed, and repeated ones.
func onlyParams(r *http.Request, allowed ...string) error {
	q := r.URL.Query()
	for _, name := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(allowed, name):
			known := "none"
			if len(allowed) > 0 {
				known = strings.Join(allowed, ", ")
			}
			return badField(name, "unknown query parameter for %s %s (known: %s)", r.Method, r.URL.Path, known)
		case len(q[name]) > 1:
			return badField(name, "query parameter given %d times", len(q[name]))
		}
	}
	return nil
}

// journalQuery reads the journal query parameters.
func (a *api) journalQuery(r *http.Request) (journal.Query, error) {
	v := r.URL.Query()
	q := journal.Query{Listener: v.Get("listener"), PathPrefix: v.Get("pathPrefix"), Method: v.Get("method")}
	if q.Listener != "" {
		if _, ok := a.e.Listener(q.Listener); !ok {
			names := make([]string, 0)
			for _, l := range a.e.Listeners() {
				names = append(names, l.Name)
			}
			return q, badField("listener", "no listener named %q (have %s)", q.Listener, strings.Join(names, ", "))
		}
	}
	if q.PathPrefix != "" && !strings.HasPrefix(q.PathPrefix, "/") {
		return q, badField("pathPrefix", "must start with '/', got %q", q.PathPrefix)
	}
	if s := v.Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return q, badField("after", "must be a request sequence number (an integer >= 0), got %q", s)
		}
		q.AfterSeq = n
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return q, badField("limit", "must be an integer >= 0 (0 = no limit), got %q", s)
		}
		q.Limit = n
	}
	return q, nil
}

type waitOpts struct {
	n       int
	ended   bool
	timeout time.Duration
}

// waitParams reads the wait route's own parameters.
func waitParams(r *http.Request) (waitOpts, error) {
	v := r.URL.Query()
	wo := waitOpts{n: 1, timeout: DefaultWaitTimeout}
	if s := v.Get("n"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return wo, badField("n", "must be an integer >= 1, got %q", s)
		}
		wo.n = n
	}
	if s := v.Get("ended"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return wo, badField("ended", "must be true or false, got %q", s)
		}
		wo.ended = b
	}
	if s := v.Get("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			return wo, badField("timeout", "must be a duration like 500ms or 5s, got %q", s)
		case d <= 0:
			return wo, badField("timeout", "must be positive, got %s", s)
		case d > MaxWaitTimeout:
			return wo, badField("timeout", "must be at most %s, got %s", MaxWaitTimeout, s)
		}
		wo.timeout = d
	}
	return wo, nil
}
