package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/edgeconform/edgeconform/emulators/fielderr"
)

// Options control validation.
type Options struct {
	// Lab relaxes the lower bounds of the origin timeouts to "> 0" so that
	// suites can run fast against the reference with sub-second timeouts.
	// Upper bounds, and readTimeout <= responseTimeout, still hold.
	Lab bool
}

// docField names the whole document in errors that belong to no field.
const docField = "config"

// Load parses data (YAML or JSON) strictly into a Config and validates it.
// Every problem is reported at once, as fielderr.Errors, each named by its
// field path ("origins[0].timeout.connectTimeout"). When the document
// cannot be decoded (bad syntax, an unknown field, a value of the wrong
// type) only those problems are reported: validating a half-read
// configuration would add misleading ones.
func Load(data []byte, opts Options) (*Config, error) {
	// YAMLToJSONStrict also rejects duplicate keys. JSON is YAML, so JSON
	// input goes through the same path.
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fielderr.Errors{{Field: docField, Problem: "not valid YAML or JSON: " + cleanYAMLError(err)}}
	}
	if line, ok := secondDocument(data); ok {
		return nil, fielderr.Errors{{Field: docField, Problem: fmt.Sprintf("holds more than one YAML document (another starts at line %d): one file is one configuration", line)}}
	}
	if es := decodeProblems(j, reflect.TypeFor[Config]()); len(es) > 0 {
		return nil, es
	}
	var c Config
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		// decodeProblems found nothing, so this should not happen; report
		// it rather than lose it.
		return nil, fielderr.Errors{{Field: docField, Problem: err.Error()}}
	}
	if err := c.Validate(opts); err != nil {
		return nil, err
	}
	return &c, nil
}

// LoadFile reads the file at path and Loads it. Problems with the contents
// are fielderr.Errors (wrapped with the file name; use fielderr.As).
func LoadFile(path string, opts Options) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Load(data, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

func cleanYAMLError(err error) string {
	s := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	if strings.Contains(s, "json: unsupported value") {
		return "a number is infinite or not a number (.inf, .nan), which JSON cannot hold"
	}
	return strings.Join(strings.Fields(s), " ")
}

// secondDocument finds a YAML document that follows the first one (the
// YAML parser reads only the first and would silently drop the rest): a
// "---" or "..." marker at the start of a line, after content, followed
// by more content. It returns the marker's line number.
func secondDocument(data []byte) (line int, ok bool) {
	seenContent, marker := false, 0
	for i, ln := range strings.Split(string(data), "\n") {
		ln = strings.TrimRight(ln, "\r")
		t := strings.TrimSpace(ln)
		if (strings.HasPrefix(ln, "---") || strings.HasPrefix(ln, "...")) && (len(ln) == 3 || ln[3] == ' ' || ln[3] == '\t') {
			if seenContent && marker == 0 {
				marker = i + 1
			}
			t = strings.TrimSpace(ln[3:]) // "--- {a: 1}" starts with content
		}
		if t == "" || t[0] == '#' || !seenContent && t[0] == '%' {
			continue
		}
		if marker != 0 {
			return marker, true
		}
		seenContent = true
	}
	return 0, false
}

// decodeProblems walks the JSON document data against type t (following
// json tags) and returns every place where decoding would fail: unknown
// fields, values of the wrong JSON type, bad durations and integers. Field
// names must match exactly (encoding/json would also accept other cases;
// the API does not).
func decodeProblems(data []byte, t reflect.Type) fielderr.Errors {
	var l fielderr.List
	var root any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&root); err != nil {
		l.Add(docField, "not valid JSON: %v", err)
		return l.Errs
	}
	walk(&l, root, t, "")
	return l.Errs
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// walk checks the generic JSON value v against t at path.
func walk(l *fielderr.List, v any, t reflect.Type, path string) {
	if v == nil {
		// As in encoding/json: null sets a pointer to nil and leaves other
		// values alone, except that a non-pointer Unmarshaler (Int64,
		// Duration in a map) is handed the null to judge.
		if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(unmarshalerType) {
			leaf(l, v, t, path)
		}
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		leaf(l, v, t, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			l.Add(orDoc(path), "must be an object, got %s", jsonKind(v))
			return
		}
		fields := jsonFields(t)
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			f, ok := fields[key]
			if !ok {
				l.Add(fieldPath(path, key), "unknown field%s", suggest(key, fields))
				continue
			}
			walk(l, obj[key], f.Type, fielderr.Join(path, key))
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			l.Add(orDoc(path), "must be a list, got %s", jsonKind(v))
			return
		}
		for i, el := range arr {
			walk(l, el, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			l.Add(orDoc(path), "must be an object, got %s", jsonKind(v))
			return
		}
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			walk(l, obj[key], t.Elem(), mapKey(path, key))
		}
	default:
		leaf(l, v, t, path)
	}
}

// leaf decodes the generic value v into a fresh t and reports why it
// cannot.
func leaf(l *fielderr.List, v any, t reflect.Type, path string) {
	b, err := json.Marshal(v)
	if err != nil {
		l.Add(orDoc(path), "%v", err)
		return
	}
	err = json.Unmarshal(b, reflect.New(t).Interface())
	if err == nil {
		return
	}
	if ute, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		want := kindName(ute.Type)
		if n, isNum := v.(json.Number); isNum && want == "an integer" {
			if strings.ContainsAny(n.String(), ".eE") {
				l.Add(orDoc(path), "must be an integer, got %s", n)
			} else {
				l.Add(orDoc(path), "must be an integer that fits in %s, got %s", ute.Type, n)
			}
			return
		}
		l.Add(orDoc(path), "must be %s, got %s", want, jsonKind(v))
		return
	}
	l.Add(orDoc(path), "%v", err)
}

func orDoc(path string) string {
	if path == "" {
		return docField
	}
	return path
}

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// fieldPath names an object member: path.key, or path["key"] when key
// would be ambiguous after a dot (empty, or holding '.', '[', spaces...).
func fieldPath(path, key string) string {
	if plainKeyRE.MatchString(key) {
		return fielderr.Join(path, key)
	}
	return mapKey(orDoc(path), key)
}

// mapKey names a map entry: path["key"].
func mapKey(path, key string) string {
	return fmt.Sprintf("%s[%q]", path, key)
}

// jsonKind names the JSON kind of a generic value.
func jsonKind(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("a string %q", v)
	case bool:
		return fmt.Sprintf("a boolean %t", v)
	case json.Number:
		return "a number " + v.String()
	}
	return fmt.Sprintf("%v", v)
}

// kindName names, with an article, the JSON kind a Go type wants.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return kindName(t.Elem())
	}
	return t.String()
}

// jsonFields maps the JSON names of struct type t's fields to the fields.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

// suggest names the known field key was probably meant to be: one that
// differs only in case, underscores or dashes (origin_address,
// OriginAddress), else one a typo or two away (originAdress).
func suggest(key string, fields map[string]reflect.StructField) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	names := slices.Sorted(maps.Keys(fields))
	for _, name := range names {
		if norm(name) == norm(key) {
			return fmt.Sprintf(" (did you mean %q?)", name)
		}
	}
	best, bestDist := "", 3
	for _, name := range names {
		if d := editDistance(norm(key), norm(name)); d < bestDist {
			best, bestDist = name, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return " (known: " + strings.Join(names, ", ") + ")"
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b)) // not a typo; keep it cheap
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
