package config

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// resourceTypes are the Go types of the two Media CDN resources.
var resourceTypes = map[string]reflect.Type{
	docOrigin:  reflect.TypeFor[Origin](),
	docService: reflect.TypeFor[Service](),
}

// resolve finds an API field path in the Go types; ok is false when some
// segment is not there.
func resolve(path string) (reflect.Type, bool) {
	res, rest, _ := strings.Cut(path, ".")
	t := resourceTypes[res]
	for seg := range strings.SplitSeq(rest, ".") {
		name := strings.TrimRight(seg, "[]{}")
		f, ok := jsonField(t, name)
		if !ok {
			return nil, false
		}
		t = deref(f.Type)
		for _, suffix := range strings.SplitAfter(seg[len(name):], "]") {
			switch {
			case suffix == "":
			case strings.HasPrefix(suffix, "[]") && t.Kind() == reflect.Slice:
				t = deref(t.Elem())
			case strings.HasPrefix(suffix, "{}") && t.Kind() == reflect.Map:
				t = deref(t.Elem())
			default:
				return nil, false
			}
		}
	}
	return t, true
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag == name && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// kindFits says whether Go type t can hold the API's JSON kind.
func kindFits(kind string, t reflect.Type) bool {
	unmarshals := reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]())
	switch kind {
	case "string":
		return t.Kind() == reflect.String || unmarshals
	case "integer":
		return t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64
	case "number":
		return t.Kind() == reflect.Float64
	case "boolean":
		return t.Kind() == reflect.Bool
	case "object":
		return t.Kind() == reflect.Struct
	case "array":
		return t.Kind() == reflect.Slice
	case "map":
		return t.Kind() == reflect.Map
	}
	return false
}

// underNotImplemented returns the not-implemented field path is, or is in.
func underNotImplemented(path string) (NotImplemented, bool) {
	for _, n := range notImplemented {
		if path == n.Path || strings.HasPrefix(path, n.Path+".") || strings.HasPrefix(path, n.Path+"[") || strings.HasPrefix(path, n.Path+"{") {
			return n, true
		}
	}
	return NotImplemented{}, false
}

// TestAPIFieldsImplementedOrListed walks every field of Google's
// EdgeCacheOrigin and EdgeCacheService (apifields.txt, from the Cloud
// SDK's schemas): each is implemented (a field of the Go types, of a
// fitting kind), listed as not implemented, or output-only, never two of
// these.
func TestAPIFieldsImplementedOrListed(t *testing.T) {
	fields := APIFields()
	if len(fields) < 100 {
		t.Fatalf("apifields.txt has %d fields: not the generated file?", len(fields))
	}
	for _, path := range slices.Sorted(mapsKeysAPI(fields)) {
		f := fields[path]
		typ, implemented := resolve(path)
		n, listed := underNotImplemented(path)
		switch {
		case f.Kind == "output-only":
			if implemented || listed {
				t.Errorf("%s is output-only (set by the API) but implemented=%v, listed as not implemented=%v", path, implemented, listed)
			}
		case implemented && listed:
			t.Errorf("%s is both implemented and listed as not implemented (%s)", path, n.Path)
		case !implemented && !listed:
			t.Errorf("Media CDN field %s (%s) is neither implemented by the Go types nor listed in notImplemented", path, f.Kind)
		case implemented && !kindFits(f.Kind, typ):
			t.Errorf("%s is a %s in the API, but the Go type is %s", path, f.Kind, typ)
		}
	}
	for _, n := range notImplemented {
		if _, ok := fields[n.Path]; !ok {
			t.Errorf("notImplemented lists %s, which is not a Media CDN field", n.Path)
		}
		if n.Why == "" {
			t.Errorf("notImplemented %s does not say why", n.Path)
		}
	}
}

// TestGoTypesAreAPIFields is the other direction: every field of the Go
// types is a field of the API (no invented or misspelt names).
func TestGoTypesAreAPIFields(t *testing.T) {
	fields := APIFields()
	var walk func(t reflect.Type, path string, depth int)
	walk = func(typ reflect.Type, path string, depth int) {
		typ = deref(typ)
		switch typ.Kind() {
		case reflect.Slice:
			walk(typ.Elem(), path+"[]", depth)
			return
		case reflect.Map:
			walk(typ.Elem(), path+"{}", depth)
			return
		case reflect.Struct:
		default:
			return
		}
		if depth > 12 || reflect.PointerTo(typ).Implements(reflect.TypeFor[json.Unmarshaler]()) {
			return
		}
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			p := path + "." + name
			if _, ok := fields[p]; !ok {
				t.Errorf("Go field %s.%s (json %q) is not a Media CDN field: %s", typ.Name(), f.Name, name, p)
				continue
			}
			walk(f.Type, p, depth+1)
		}
	}
	for res, typ := range resourceTypes {
		walk(typ, res, 0)
	}
}

// TestEnumsMatchAPI checks the enumerations validation accepts against the
// API's (less its *_UNSPECIFIED placeholder).
func TestEnumsMatchAPI(t *testing.T) {
	const rr = "EdgeCacheService.routing.pathMatchers[].routeRules[]."
	for path, ours := range map[string][]string{
		"EdgeCacheOrigin.protocol":                            protocolValues,
		"EdgeCacheOrigin.retryConditions[]":                   retryConditionValues,
		"EdgeCacheOrigin.originRedirect.redirectConditions[]": redirectConditionValues,
		rr + "urlRedirect.redirectResponseCode":               redirectResponseCodes,
		rr + "routeAction.cdnPolicy.cacheMode":                cacheModeValues,
	} {
		var api []string
		for _, v := range APIFields()[path].Enum {
			if !strings.HasSuffix(v, "_UNSPECIFIED") {
				api = append(api, v)
			}
		}
		if !slices.Equal(slices.Sorted(slices.Values(ours)), api) {
			t.Errorf("%s: validation accepts %v, the API has %v", path, ours, api)
		}
	}
}

// TestReadmeListsNotImplemented keeps README.md's list of the fields the
// reference does not implement the same as the code's.
func TestReadmeListsNotImplemented(t *testing.T) {
	for _, file := range []string{"../../README.md", "../../docs/mediacdn-config.md"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		const begin, end = "<!-- not-implemented:begin (generated: config.NotImplementedMarkdown) -->\n", "<!-- not-implemented:end -->"
		_, rest, ok := strings.Cut(string(data), begin)
		got, _, ok2 := strings.Cut(rest, end)
		if !ok || !ok2 {
			t.Fatalf("%s has no %q ... %q block", file, begin, end)
		}
		if want := NotImplementedMarkdown(); got != want {
			t.Errorf("%s's list of not-implemented fields is out of date; want:\n%s", file, want)
		}
	}
}

func mapsKeysAPI(m map[string]APIField) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// CheckAPI decodes a resource strictly against Google's field tree.
func TestCheckAPI(t *testing.T) {
	for _, f := range []string{"primary-origin.yaml", "backup-origin.yaml", "prod-media-service.yaml"} {
		data, err := os.ReadFile("../../fixtures/mediacdn/export/" + f)
		if err != nil {
			t.Fatal(err)
		}
		kind := docOrigin
		if strings.Contains(f, "service") {
			kind = docService
		}
		if es := CheckAPI(data, kind); len(es) > 0 {
			t.Errorf("%s: %v", f, es)
		}
	}
	for _, tc := range []struct{ doc, kind, field, want string }{
		{"name: o\noriginAdress: x\n", docOrigin, "originAdress", "unknown field"},
		{"name: o\nprotocol: QUIC\n", docOrigin, "protocol", "must be one of"},
		{"name: o\nmaxAttempts: two\n", docOrigin, "maxAttempts", "must be an integer"},
		{"name: s\nrouting: {pathMatchers: [{routeRules: [{priority: '1', matchRules: [{prefixMatch: /}], bogus: 1}]}]}\n", docService, "routing.pathMatchers[0].routeRules[0].bogus", "unknown field"},
		{"name: s\nlabels: {a: 1}\n", docService, `labels["a"]`, "must be a string"},
		{"name: o\n", "EdgeCacheKeyset", "config", "unknown resource kind"},
	} {
		es := CheckAPI([]byte(tc.doc), tc.kind)
		if _, ok := findErr(es, tc.field, tc.want); !ok {
			t.Errorf("%q: no %q at %s in %v", tc.doc, tc.want, tc.field, es)
		}
	}
}
