package fielderr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
)

// CheckJSON walks the JSON document data against type t (following json
// tags) and returns every place where decoding it into a t would fail:
// unknown fields (with a suggestion for a near miss), values of the wrong
// JSON type, and values a json.Unmarshaler rejects (durations, integers).
// Field names must match exactly (encoding/json would also accept other
// cases; our inputs do not). Paths start with path; problems with the whole
// document are named root.
func CheckJSON(data []byte, t reflect.Type, path, root string) Errors {
	w := &walker{root: root}
	var doc any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		w.l.Add(w.orDoc(path), "not valid JSON: %v", err)
		return w.l.Errs
	}
	w.walk(doc, t, path)
	return w.l.Errs
}

type walker struct {
	l    List
	root string
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// walk checks the generic JSON value v against t at path.
func (w *walker) walk(v any, t reflect.Type, path string) {
	if v == nil {
		// As in encoding/json: null sets a pointer to nil and leaves other
		// values alone, except that a non-pointer Unmarshaler (Int64,
		// Duration in a map) is handed the null to judge.
		if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(unmarshalerType) {
			w.leaf(v, t, path)
		}
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		w.leaf(v, t, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			w.l.Add(w.orDoc(path), "must be an object, got %s", jsonKind(v))
			return
		}
		fields := jsonFields(t)
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			f, ok := fields[key]
			if !ok {
				w.l.Add(w.fieldPath(path, key), "unknown field %q%s", key, suggest(key, fields))
				continue
			}
			w.walk(obj[key], f.Type, Join(path, key))
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			w.l.Add(w.orDoc(path), "must be a list, got %s", jsonKind(v))
			return
		}
		for i, el := range arr {
			w.walk(el, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			w.l.Add(w.orDoc(path), "must be an object, got %s", jsonKind(v))
			return
		}
		for _, key := range slices.Sorted(maps.Keys(obj)) {
			w.walk(obj[key], t.Elem(), MapKey(w.orDoc(path), key))
		}
	default:
		w.leaf(v, t, path)
	}
}

// leaf decodes the generic value v into a fresh t and reports why it
// cannot.
func (w *walker) leaf(v any, t reflect.Type, path string) {
	b, err := json.Marshal(v)
	if err != nil {
		w.l.Add(w.orDoc(path), "%v", err)
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
				w.l.Add(w.orDoc(path), "must be an integer, got %s", n)
			} else {
				w.l.Add(w.orDoc(path), "must be an integer that fits in %s, got %s", ute.Type, n)
			}
			return
		}
		w.l.Add(w.orDoc(path), "must be %s, got %s", want, jsonKind(v))
		return
	}
	w.l.Add(w.orDoc(path), "%v", err)
}

func (w *walker) orDoc(path string) string {
	if path == "" {
		return w.root
	}
	return path
}

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// fieldPath names an object member: path.key, or path["key"] when key
// would be ambiguous after a dot (empty, or holding '.', '[', spaces...).
func (w *walker) fieldPath(path, key string) string {
	if plainKeyRE.MatchString(key) {
		return Join(path, key)
	}
	return MapKey(w.orDoc(path), key)
}

// MapKey names a map entry: path["key"].
func MapKey(path, key string) string {
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

// jsonFields maps the JSON names of struct type t's fields to the fields,
// as encoding/json sees them: untagged embedded structs are inlined.
func jsonFields(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			for k, v := range jsonFields(ft) {
				if _, shadowed := out[k]; !shadowed {
					out[k] = v
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
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
