package config

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
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
