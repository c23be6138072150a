package config

import (
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// apiFieldsText is the field tree of Media CDN's EdgeCacheOrigin and
// EdgeCacheService (networkservices v1) as the Google Cloud SDK's export
// schemas give it: Google's own description of the resources, the ground
// truth the configuration's types are checked against (apifields_test.go).
// Regenerate with `go generate ./reference/config` on a machine with the
// SDK (Debian package google-cloud-cli).
//
//go:generate sh -c "go run ./internal/genapifields > apifields.txt"
//go:embed apifields.txt
var apiFieldsText string

// APIField is one field of a Media CDN resource.
type APIField struct {
	// Path is the field's path from its resource: "EdgeCacheOrigin.timeout.
	// connectTimeout"; "[]" stands for an array's items, "{}" for a map's
	// values ("EdgeCacheService.labels{}").
	Path string
	// Kind is the JSON kind: string, integer, number, boolean, object,
	// array, map, or output-only (set by the API, ignored on input).
	Kind string
	// Enum lists an enum's values.
	Enum []string
}

// APIFields returns the fields of EdgeCacheOrigin and EdgeCacheService,
// keyed by Path.
var APIFields = sync.OnceValue(func() map[string]APIField {
	fields, err := parseAPIFields(apiFieldsText)
	if err != nil {
		panic(err) // the embedded file is generated; its test parses it
	}
	return fields
})

func parseAPIFields(text string) (map[string]APIField, error) {
	fields := map[string]APIField{}
	for i, line := range strings.Split(text, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		parts := strings.Fields(line)
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("apifields.txt line %d: want PATH KIND [ENUM], got %q", i+1, line)
		}
		f := APIField{Path: parts[0], Kind: parts[1]}
		if len(parts) == 3 {
			f.Enum = strings.Split(parts[2], ",")
		}
		fields[f.Path] = f
	}
	return fields, nil
}

// CheckAPI decodes data (YAML or JSON: one resource, kind "EdgeCacheOrigin"
// or "EdgeCacheService") strictly against Google's field tree (APIFields):
// every field must be one of the resource's, of its JSON kind (an integer
// may be written as a string, as the API's JSON writes int64s; an enum
// must hold one of its values). Output-only fields are accepted. It is for
// configurations written for Media CDN itself (gcloud import files): the
// reference's own loading is Load.
func CheckAPI(data []byte, kind string) fielderr.Errors {
	if _, ok := resourceKinds[kind]; !ok {
		return fielderr.Errors{{Field: docField, Problem: fmt.Sprintf("unknown resource kind %q (want EdgeCacheOrigin or EdgeCacheService)", kind)}}
	}
	doc, err := parseDoc(data)
	if err != nil {
		return fielderr.Errors{{Field: docField, Problem: err.Error()}}
	}
	var l fielderr.List
	checkAPIValue(&l, APIFields(), doc, kind, "", "object")
	es, _ := l.Err().(fielderr.Errors)
	return es
}

var resourceKinds = map[string]bool{docOrigin: true, docService: true}

func checkAPIValue(l *fielderr.List, fields map[string]APIField, v any, api, field, kind string) {
	switch kind {
	case "output-only":
		return
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			l.Add(orDoc(field), "must be an object, got %s", jsonKind(v))
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			f, ok := fields[api+"."+k]
			if !ok {
				l.Add(fielderr.Join(field, k), "unknown field: %s has no field %q", api, k)
				continue
			}
			checkAPIValue(l, fields, m[k], f.Path, fielderr.Join(field, k), f.Kind)
		}
	case "map":
		m, ok := v.(map[string]any)
		if !ok {
			l.Add(orDoc(field), "must be a map, got %s", jsonKind(v))
			return
		}
		vf := fields[api+"{}"]
		for _, k := range slices.Sorted(maps.Keys(m)) {
			checkAPIValue(l, fields, m[k], vf.Path, fielderr.MapKey(field, k), vf.Kind)
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			l.Add(field, "must be a list, got %s", jsonKind(v))
			return
		}
		ef := fields[api+"[]"]
		for i, e := range a {
			checkAPIValue(l, fields, e, ef.Path, fmt.Sprintf("%s[%d]", field, i), ef.Kind)
		}
	default:
		checkAPIScalar(l, fields[api], v, field)
	}
}

func checkAPIScalar(l *fielderr.List, f APIField, v any, field string) {
	ok := false
	switch f.Kind {
	case "string":
		s, isStr := v.(string)
		ok = isStr && (len(f.Enum) == 0 || slices.Contains(f.Enum, s))
		if isStr && !ok {
			l.Add(field, "must be one of %s, got %q", strings.Join(f.Enum, ", "), s)
			return
		}
	case "integer":
		switch x := v.(type) {
		case float64:
			ok = x == float64(int64(x))
		case string:
			_, err := strconv.ParseInt(x, 10, 64)
			ok = err == nil
		}
	case "number":
		_, ok = v.(float64)
	case "boolean":
		_, ok = v.(bool)
	}
	if !ok {
		article := "a"
		if f.Kind == "integer" {
			article = "an"
		}
		l.Add(field, "must be %s %s, got %s", article, f.Kind, jsonKind(v))
	}
}

func orDoc(field string) string {
	if field == "" {
		return docField
	}
	return field
}

func jsonKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %q", clip(x))
	case float64:
		return fmt.Sprintf("the number %v", x)
	case bool:
		return fmt.Sprintf("%v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
