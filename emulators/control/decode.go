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
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			p := prefix(i, len(raws))
			fe := diagnose(raw, reflect.TypeFor[T](), p, what)
			if fe == nil {
				fe = &rules.FieldError{Field: orBody(p), Problem: err.Error()}
			}
			fields = append(fields, *fe)
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

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// FieldProblem finds the first thing in the JSON document data that cannot
// be decoded into v's type (an unknown field, a value of the wrong type, a
// bad duration) and names it by its path ("listeners[0].adress"), the way
// the API's errors do. ok is false when it finds nothing wrong.
func FieldProblem(data []byte, v any) (fe rules.FieldError, ok bool) {
	t := reflect.TypeOf(v)
	if t == nil || !json.Valid(data) {
		return fe, false
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if p := diagnose(data, t, "", "JSON"); p != nil {
		return *p, true
	}
	return fe, false
}

// diagnose finds the first thing in raw that cannot be decoded into t (an
// unknown field, a value of the wrong type, a bad duration) and names it by
// its path below path. It returns nil when it finds nothing.
func diagnose(raw json.RawMessage, t reflect.Type, path, what string) *rules.FieldError {
	if isNull(raw) {
		return nil
	}
	if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) {
		return leaf(raw, t, path)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return diagnose(raw, t.Elem(), path, what)
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			if path == "" {
				return &rules.FieldError{Field: "body", Problem: fmt.Sprintf("must be a %s object or an array of them, got %s", what, jsonKind(raw))}
			}
			return &rules.FieldError{Field: path, Problem: "must be a JSON object, got " + jsonKind(raw)}
		}
		fields := jsonFields(t)
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			f, ok := lookupField(fields, key)
			if !ok {
				return &rules.FieldError{Field: join(path, key), Problem: fmt.Sprintf("unknown field %q (known: %s)", key, fieldNames(fields))}
			}
			if fe := diagnose(obj[key], f.typ, join(path, f.name), what); fe != nil {
				return fe
			}
		}
		return nil
	case reflect.Slice, reflect.Array:
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil {
			return &rules.FieldError{Field: orBody(path), Problem: "must be a JSON array, got " + jsonKind(raw)}
		}
		for i, el := range arr {
			if fe := diagnose(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i), what); fe != nil {
				return fe
			}
		}
		return nil
	case reflect.Map:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return &rules.FieldError{Field: orBody(path), Problem: "must be a JSON object, got " + jsonKind(raw)}
		}
		for _, key := range slices.Sorted(maps.Keys(m)) {
			if fe := diagnose(m[key], t.Elem(), join(path, key), what); fe != nil {
				return fe
			}
		}
		return nil
	}
	return leaf(raw, t, path)
}

// leaf decodes raw into a fresh t and reports why it cannot.
func leaf(raw json.RawMessage, t reflect.Type, path string) *rules.FieldError {
	err := json.Unmarshal(raw, reflect.New(t).Interface())
	if err == nil {
		return nil
	}
	problem := err.Error()
	if ute, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		problem = fmt.Sprintf("must be a JSON %s, got %s", kindName(ute.Type), jsonKind(raw))
		if strings.HasPrefix(ute.Value, "number") && kindName(ute.Type) == "integer" {
			problem = fmt.Sprintf("must be an integer that fits in %s, got %s", ute.Type, bytes.TrimSpace(raw))
		}
	}
	return &rules.FieldError{Field: orBody(path), Problem: problem}
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string " + string(raw)
	case 't', 'f':
		return "a boolean " + string(raw)
	case 'n':
		return "null"
	}
	return "a number " + string(raw)
}

// kindName names the JSON kind a Go type wants.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return kindName(t.Elem())
	}
	return t.String()
}

type jsonField struct {
	name string
	typ  reflect.Type
}

// jsonFields lists the JSON fields of struct type t as encoding/json sees
// them, embedded structs inlined.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				out = append(out, jsonFields(ft)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, typ: f.Type})
	}
	return out
}

// lookupField finds key as encoding/json does: exactly, else ignoring case.
func lookupField(fields []jsonField, key string) (jsonField, bool) {
	for _, f := range fields {
		if f.name == key {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(f.name, key) {
			return f, true
		}
	}
	return jsonField{}, false
}

func fieldNames(fields []jsonField) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
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
