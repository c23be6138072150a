package config

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// A configuration can come in the files gcloud writes: `gcloud edge-cache
// origins export` and `services export` write one resource per file, with
// full resource names (projects/P/locations/global/edgeCacheOrigins/NAME)
// and output-only fields (createTime, updateTime). LoadFiles reads any mix
// of those and combined files (origins:, service:, reference:).

// source is one file's document, decoded as JSON values.
type source struct {
	file string // "" for Load's single document
	doc  map[string]any
}

// Kinds of document.
const (
	docCombined = "combined"
	docOrigin   = "EdgeCacheOrigin"
	docService  = "EdgeCacheService"
)

// kindOf tells a combined file from an exported resource.
func kindOf(doc map[string]any) (string, error) {
	_, o := doc["origins"]
	_, s := doc["service"]
	_, r := doc["reference"]
	_, addr := doc["originAddress"]
	_, routing := doc["routing"]
	switch {
	case o || s || r || len(doc) == 0:
		return docCombined, nil
	case addr:
		return docOrigin, nil
	case routing:
		return docService, nil
	}
	return "", fmt.Errorf("is neither an EdgeCacheOrigin (it has no originAddress), an EdgeCacheService (no routing) nor a combined configuration (no origins, service or reference)")
}

// parseDoc reads data (YAML or JSON) into JSON values.
func parseDoc(data []byte) (map[string]any, error) {
	// YAMLToJSONStrict also rejects duplicate keys. JSON is YAML, so JSON
	// input goes through the same path.
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML or JSON: %s", cleanYAMLError(err))
	}
	if line, ok := secondDocument(data); ok {
		return nil, fmt.Errorf("holds more than one YAML document (another starts at line %d): one file is one configuration or one resource", line)
	}
	var doc map[string]any
	if err := json.Unmarshal(j, &doc); err != nil {
		return nil, fmt.Errorf("must be an object (a configuration or a Media CDN resource), got %s", clip(string(j)))
	}
	if doc == nil {
		doc = map[string]any{} // an empty file: every required field is missing
	}
	return doc, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// expandPaths lists the files of paths: a file as given, a directory's
// *.yaml, *.yml and *.json files in name order.
func expandPaths(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		n := len(files)
		for _, e := range ents {
			switch filepath.Ext(e.Name()) {
			case ".yaml", ".yml", ".json":
				if !e.IsDir() {
					files = append(files, filepath.Join(p, e.Name()))
				}
			}
		}
		if len(files) == n {
			return nil, fmt.Errorf("config: directory %s has no .yaml, .yml or .json file", p)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("config: no configuration file given")
	}
	return files, nil
}

// resourceNames checks full resource names and shortens them to the
// resource IDs the rest of the configuration uses. Every full name must
// be in the same project and in location global.
type resourceNames struct {
	project, where string // the first full name's project, and its field
	file           string // the file being read ("" in a combined file)
	l              *fielderr.List
}

// short returns s's resource ID. s is "ID" or
// "projects/P/locations/global/COLLECTION/ID".
func (n *resourceNames) short(field, s, collection string) string {
	field = fileField(n.file, field)
	if !strings.HasPrefix(s, "projects/") {
		return s
	}
	parts := strings.Split(s, "/")
	if len(parts) != 6 || parts[2] != "locations" || parts[1] == "" || parts[5] == "" {
		n.l.Add(field, "must be a name or projects/PROJECT/locations/global/%s/NAME, got %q", collection, s)
		return s
	}
	if parts[4] != collection {
		n.l.Add(field, "names a %s resource (%q), want one of %s", parts[4], s, collection)
		return parts[5]
	}
	if parts[3] != "global" {
		n.l.Add(field, "must be in location global (Media CDN's resources are global), got %q", parts[3])
	}
	switch {
	case n.project == "":
		n.project, n.where = parts[1], field
	case n.project != parts[1]:
		n.l.Add(field, "is in project %q, but %s is in project %q: one configuration is one project's resources", parts[1], n.where, n.project)
	}
	return parts[5]
}

// shortenString replaces m[key], when a string, with its resource ID.
func (n *resourceNames) shortenString(m map[string]any, key, field, collection string) {
	if s, ok := m[key].(string); ok {
		m[key] = n.short(fielderr.Join(field, key), s, collection)
	}
}

func (n *resourceNames) origin(o map[string]any, field string) {
	n.shortenString(o, "name", field, "edgeCacheOrigins")
	n.shortenString(o, "failoverOrigin", field, "edgeCacheOrigins")
}

func (n *resourceNames) service(s map[string]any, field string) {
	n.shortenString(s, "name", field, "edgeCacheServices")
	routing, _ := s["routing"].(map[string]any)
	pms, _ := routing["pathMatchers"].([]any)
	for i, pm := range pms {
		rrs, _ := asMap(pm)["routeRules"].([]any)
		for j, rr := range rrs {
			if m := asMap(rr); m != nil {
				n.shortenString(m, "origin", fielderr.Join(field, fmt.Sprintf("routing.pathMatchers[%d].routeRules[%d]", i, j)), "edgeCacheOrigins")
			}
		}
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// assembly merges sources into one combined document, remembering which
// file each resource came from so that problems name it.
type assembly struct {
	doc      map[string]any // the combined document
	combined bool           // some source was a combined document
	origins  []any
	svcFrom  string            // where the service came from, for "two services"
	from     map[string]string // "origins[3]" or "service" -> the file it came from
	names    resourceNames
	strip    *stripper
	problems fielderr.List
}

func newAssembly() *assembly {
	a := &assembly{doc: map[string]any{}, from: map[string]string{}, strip: newStripper()}
	a.names.l = &a.problems
	return a
}

// assemble merges srcs: combined documents first (their origins keep
// their indexes), then exported resources in order.
func assemble(srcs []source) *assembly {
	a := newAssembly()
	kinds := make([]string, len(srcs))
	for i, src := range srcs {
		k, err := kindOf(src.doc)
		if err != nil {
			a.problems.Add(docAt(src.file), "%v", err)
		}
		kinds[i] = k
	}
	for i, src := range srcs {
		if kinds[i] == docCombined {
			a.addCombined(src)
		}
	}
	for i, src := range srcs {
		switch kinds[i] {
		case docOrigin:
			a.addOrigin(src.doc, src.file)
		case docService:
			a.setService(src.doc, src.file)
		}
	}
	if a.origins != nil || a.doc["origins"] == nil {
		a.doc["origins"] = a.origins
	}
	return a
}

func (a *assembly) addCombined(src source) {
	a.combined = true
	for _, k := range slices.Sorted(maps.Keys(src.doc)) { // origins before service: problems in a stable order
		v := src.doc[k]
		switch k {
		case "origins":
			list, ok := v.([]any)
			if !ok {
				a.doc["origins"] = v // the decoder reports its type
				continue
			}
			for _, o := range list {
				a.addOrigin(o, "")
			}
		case "service":
			a.setService(v, "")
			if src.file != "" {
				a.svcFrom = src.file
			}
		default:
			a.doc[k] = v // reference:, or an unknown field the decoder reports
		}
	}
}

func (a *assembly) addOrigin(o any, file string) {
	field := fmt.Sprintf("origins[%d]", len(a.origins))
	local := field
	if file != "" {
		a.from[field] = file
		local = ""
	}
	if m := asMap(o); m != nil {
		a.names.file = file
		a.names.origin(m, local)
		a.stripResource(m, docOrigin, local, file)
	}
	a.origins = append(a.origins, o)
}

func (a *assembly) setService(s any, file string) {
	if _, dup := a.doc["service"]; dup {
		where := a.svcFrom
		if where == "" {
			where = "another file"
		}
		a.problems.Add(docAt(file), "is a second EdgeCacheService (the first is in %s): a configuration has one service", where)
		return
	}
	local := "service"
	if file != "" {
		a.from["service"], a.svcFrom, local = file, file, ""
	}
	if m := asMap(s); m != nil {
		a.names.file = file
		a.names.service(m, local)
		a.stripResource(m, docService, local, file)
	}
	a.doc["service"] = s
}

// stripResource drops output-only and not-implemented fields (stripper).
func (a *assembly) stripResource(m map[string]any, kind, field, file string) {
	n := len(a.strip.found)
	a.strip.walk(m, kind, field)
	for i := n; i < len(a.strip.found); i++ {
		a.strip.found[i].Field = fileField(file, a.strip.found[i].Field)
	}
}

// docAt names a whole document: its file, or "config".
func docAt(file string) string {
	if file == "" {
		return docField
	}
	return file
}

// fileField names field in file ("my-origin.yaml: timeout"); field alone
// when file is "".
func fileField(file, field string) string {
	switch {
	case file == "":
		return field
	case field == "":
		return file
	}
	return file + ": " + field
}

// localize renames problems in resources that came from their own file:
// "origins[2].timeout" becomes "my-origin.yaml: timeout".
func (a *assembly) localize(es fielderr.Errors) fielderr.Errors {
	if len(a.from) == 0 {
		return es
	}
	out := slices.Clone(es)
	for i, e := range out {
		for prefix, file := range a.from {
			rest, ok := strings.CutPrefix(e.Field, prefix)
			if !ok || rest != "" && rest[0] != '.' && rest[0] != '[' {
				continue
			}
			out[i].Field = fileField(file, strings.TrimPrefix(rest, "."))
			break
		}
	}
	return out
}
