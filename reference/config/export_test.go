package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/internal/fielderr"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const (
	exportOrigin = `createTime: '2026-05-06T18:01:44.219337797Z'
name: projects/my-project/locations/global/edgeCacheOrigins/primary
originAddress: origin.example.com
failoverOrigin: projects/my-project/locations/global/edgeCacheOrigins/backup
maxAttempts: 2
timeout: {connectTimeout: 5s, responseTimeout: 90s}
updateTime: '2026-05-06T18:01:46.381335201Z'
`
	exportBackup  = `{"name": "projects/my-project/locations/global/edgeCacheOrigins/backup", "originAddress": "backup.example.com", "createTime": "2026-05-06T18:00:00Z"}`
	exportService = `createTime: '2026-05-06T18:05:11.482193810Z'
ipv4Addresses: [34.104.35.1]
ipv6Addresses: ['2600:1900:4110:d18::']
name: projects/my-project/locations/global/edgeCacheServices/prod-media-service
routing:
  hostRules: [{hosts: [media.example.com], pathMatcher: routes}]
  pathMatchers:
  - name: routes
    routeRules:
    - priority: '1'
      matchRules: [{prefixMatch: /video/}]
      origin: projects/my-project/locations/global/edgeCacheOrigins/primary
      routeAction: {cdnPolicy: {cacheMode: FORCE_CACHE_ALL, defaultTtl: 3600s}}
      headerAction:
        responseHeadersToAdd:
        - {headerName: x-cache-status, headerValue: '{cdn_cache_status}'}
        - {headerName: client-geo, headerValue: '{client_region}', replace: true}
updateTime: '2026-05-06T18:05:13.901233127Z'
`
)

// Issue #17: the files gcloud exports load unchanged: full names in name,
// origin and failoverOrigin, output-only fields, int64s as strings,
// durations as "3600s", response header variables.
func TestLoadExports(t *testing.T) {
	dir := writeFiles(t, map[string]string{"primary.yaml": exportOrigin, "backup.json": exportBackup, "service.yaml": exportService})
	for _, paths := range [][]string{{dir}, {filepath.Join(dir, "primary.yaml"), filepath.Join(dir, "backup.json"), filepath.Join(dir, "service.yaml")}} {
		c, err := LoadFiles(paths, Options{})
		if err != nil {
			t.Fatalf("LoadFiles(%v): %v", paths, err)
		}
		if len(c.Origins) != 2 || c.Service.Name != "prod-media-service" {
			t.Fatalf("got origins %+v, service %q", c.Origins, c.Service.Name)
		}
		p, ok := c.Origin("primary")
		if !ok || p.FailoverOrigin != "backup" || p.Timeout.ResponseTimeout.D().Seconds() != 90 {
			t.Errorf("primary = %+v", p)
		}
		rr := c.Service.Routing.PathMatchers[0].RouteRules[0]
		if rr.Origin != "primary" || rr.Priority != 1 {
			t.Errorf("route = origin %q priority %d", rr.Origin, rr.Priority)
		}
	}
}

func loadFilesErrs(t *testing.T, files map[string]string, opts Options) (fielderr.Errors, string) {
	t.Helper()
	dir := writeFiles(t, files)
	_, err := LoadFiles([]string{dir}, opts)
	if err == nil {
		t.Fatalf("%v: no error", files)
	}
	es, ok := fielderr.As(err)
	if !ok {
		t.Fatalf("not field errors: %v", err)
	}
	return es, dir
}

func TestExportProblems(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		field string // the problem's field, after the directory
		want  string
	}{
		{"another project", map[string]string{"p.yaml": exportOrigin, "b.json": exportBackup, "s.yaml": strings.Replace(exportService, "projects/my-project/locations/global/edgeCacheServices", "projects/their-project/locations/global/edgeCacheServices", 1)},
			"s.yaml: name", `is in project "their-project"`},
		{"wrong collection", map[string]string{"p.yaml": exportOrigin, "b.json": exportBackup, "s.yaml": strings.Replace(exportService, "edgeCacheOrigins/primary", "edgeCacheServices/primary", 1)},
			"s.yaml: routing.pathMatchers[0].routeRules[0].origin", "want one of edgeCacheOrigins"},
		{"regional location", map[string]string{"p.yaml": strings.Replace(exportOrigin, "global/edgeCacheOrigins/primary", "europe-west1/edgeCacheOrigins/primary", 1), "b.json": exportBackup, "s.yaml": exportService},
			"p.yaml: name", "location global"},
		{"bad full name", map[string]string{"p.yaml": exportOrigin, "b.json": exportBackup, "s.yaml": strings.Replace(exportService, "projects/my-project/locations/global/edgeCacheServices/prod-media-service", "projects/my-project/prod-media-service", 1)},
			"s.yaml: name", "projects/PROJECT/locations/global/edgeCacheServices/NAME"},
		{"problem in a file", map[string]string{"p.yaml": strings.Replace(exportOrigin, "connectTimeout: 5s", "connectTimeout: 20s", 1), "b.json": exportBackup, "s.yaml": exportService},
			"p.yaml: timeout.connectTimeout", "between 1s and 15s"},
		{"unknown field in a file", map[string]string{"p.yaml": exportOrigin + "originAdress: x\n", "b.json": exportBackup, "s.yaml": exportService},
			"p.yaml: originAdress", "unknown field"},
		{"two services", map[string]string{"p.yaml": exportOrigin, "b.json": exportBackup, "s.yaml": exportService, "t.yaml": exportService},
			"t.yaml", "second EdgeCacheService"},
		{"no service", map[string]string{"p.yaml": exportOrigin, "b.json": exportBackup},
			"config", "no EdgeCacheService"},
		{"one origin alone", map[string]string{"p.yaml": exportOrigin},
			"config", "no EdgeCacheService"},
		{"not a resource", map[string]string{"p.yaml": exportOrigin, "b.json": exportBackup, "s.yaml": exportService, "x.yaml": "description: what am I\n"},
			"x.yaml", "neither an EdgeCacheOrigin"},
		{"request header variable", map[string]string{"p.yaml": exportOrigin, "b.json": exportBackup, "s.yaml": strings.Replace(exportService, "responseHeadersToAdd:", "requestHeadersToAdd: [{headerName: x-geo, headerValue: 'r={client_region}'}]\n        responseHeadersToAdd:", 1)},
			"s.yaml: routing.pathMatchers[0].routeRules[0].headerAction.requestHeadersToAdd[0].headerValue", "must be a static value"},
		{"origin request header variable", map[string]string{"p.yaml": exportOrigin + "originOverrideAction: {headerAction: {requestHeadersToAdd: [{headerName: x-s, headerValue: '{cdn_cache_status}'}]}}\n", "b.json": exportBackup, "s.yaml": exportService},
			"p.yaml: originOverrideAction.headerAction.requestHeadersToAdd[0].headerValue", "must be a static value"},
		{"unknown response variable", map[string]string{"p.yaml": exportOrigin, "b.json": exportBackup, "s.yaml": strings.Replace(exportService, "{cdn_cache_status}", "{cache_status}", 1)},
			"s.yaml: routing.pathMatchers[0].routeRules[0].headerAction.responseHeadersToAdd[0].headerValue", "unknown header variable {cache_status}"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			es, dir := loadFilesErrs(t, tc.files, Options{})
			want := tc.field
			if want != "config" {
				want = filepath.Join(dir, tc.field)
			}
			if _, ok := findErr(es, want, tc.want); !ok {
				t.Fatalf("no %q error at %s in:\n%v", tc.want, want, es)
			}
		})
	}
}

// A Media CDN field the reference does not implement is its own kind of
// problem, distinct from an unknown field; AllowUnimplemented accepts it
// and lists it. A zero or listed harmless value is no problem.
func TestNotImplementedFields(t *testing.T) {
	svc := strings.Replace(exportService, "routing:", "requireTls: true\nedgeSecurityPolicy: projects/my-project/global/securityPolicies/p\nrouting:", 1)
	svc = strings.Replace(svc, "      routeAction: {cdnPolicy: {cacheMode: FORCE_CACHE_ALL, defaultTtl: 3600s}}\n", "      routeAction:\n        compressionMode: AUTOMATIC\n        cdnPolicy: {signedRequestMode: DISABLED, cacheMode: CACHE_ALL_STATIC}\n        corsPolicy: {allowOrigins: ['*'], maxAge: 600s}\n", 1)
	files := map[string]string{"p.yaml": exportOrigin, "b.json": exportBackup, "s.yaml": svc}
	es, dir := loadFilesErrs(t, files, Options{})
	s := func(f string) string { return filepath.Join(dir, "s.yaml") + ": " + f }
	wantFields := []string{s("edgeSecurityPolicy"), s("requireTls"), s("routing.pathMatchers[0].routeRules[0].routeAction.compressionMode"), s("routing.pathMatchers[0].routeRules[0].routeAction.corsPolicy")}
	if len(es) != len(wantFields) {
		t.Fatalf("got %d problems, want %d:\n%v", len(es), len(wantFields), es)
	}
	for _, f := range wantFields {
		if _, ok := findErr(es, f, "Media CDN field not implemented by the reference: "+f); !ok {
			t.Errorf("no not-implemented error at %s in:\n%v", f, es)
		}
	}
	for _, e := range es {
		if strings.Contains(e.Problem, "unknown field") {
			t.Errorf("reported as unknown: %v", e)
		}
	}
	c, err := LoadFiles([]string{dir}, Options{AllowUnimplemented: true})
	if err != nil {
		t.Fatalf("AllowUnimplemented: %v", err)
	}
	var got []string
	for _, u := range c.Unimplemented() {
		got = append(got, u.Field)
	}
	if strings.Join(got, ",") != strings.Join(wantFields, ",") {
		t.Errorf("Unimplemented() = %v, want %v", got, wantFields)
	}
	// The same fields, unset or off, are no problem.
	off := strings.NewReplacer("requireTls: true", "requireTls: false", "compressionMode: AUTOMATIC", "compressionMode: DISABLED").Replace(svc)
	off = strings.Replace(off, "edgeSecurityPolicy: projects/my-project/global/securityPolicies/p\n", "", 1)
	off = strings.Replace(off, "        corsPolicy: {allowOrigins: ['*'], maxAge: 600s}\n", "", 1)
	dir = writeFiles(t, map[string]string{"p.yaml": exportOrigin, "b.json": exportBackup, "s.yaml": off})
	if c, err := LoadFiles([]string{dir}, Options{}); err != nil || len(c.Unimplemented()) != 0 {
		t.Errorf("fields left off: %v, %v", err, c)
	}
}

// A combined file also takes full names (and its origins keep their
// indexes in problems).
func TestCombinedFullNames(t *testing.T) {
	c, err := LoadFile("../../fixtures/mediacdn/combined/media.yaml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Origins[0].Name != "origin" || c.Service.Name != "media" || c.Service.Routing.PathMatchers[0].RouteRules[0].Origin != "origin" {
		t.Errorf("names not shortened: %q %q", c.Origins[0].Name, c.Service.Name)
	}
}
