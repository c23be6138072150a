package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// NotImplemented is a Media CDN field the reference accepts in a
// configuration but does not implement. A configuration that sets one (to
// anything but its zero value or a value listed in Harmless) is refused,
// unless Options.AllowUnimplemented, with "Media CDN field not implemented
// by the reference: PATH" (distinct from an unknown field, which Media CDN
// would not accept either).
type NotImplemented struct {
	Path     string // APIField.Path
	Why      string // what the reference lacks
	Harmless []string
}

const (
	whyTLS     = "the reference serves cleartext HTTP/1.1 and h2c only: no TLS to clients"
	whySigned  = "signed requests and tokens are not implemented: requests are served unsigned"
	routeRules = "EdgeCacheService.routing.pathMatchers[].routeRules[]."
)

// notImplemented is every Media CDN field the reference does not
// implement; apifields_test.go checks that every field of APIFields is
// either implemented (a field of the Go types) or listed here.
var notImplemented = []NotImplemented{
	{Path: "EdgeCacheService.requireTls", Why: whyTLS},
	{Path: "EdgeCacheService.edgeSslCertificates", Why: whyTLS},
	{Path: "EdgeCacheService.disableHttp2", Why: "the reference always offers HTTP/2 (h2c)"},
	{Path: "EdgeCacheService.edgeSecurityPolicy", Why: "no Cloud Armor edge security policy is applied"},
	{Path: routeRules + "routeAction.corsPolicy", Why: "no CORS policy: preflights go to the origin and no CORS headers are added"},
	{Path: routeRules + "routeAction.compressionMode", Why: "responses are never compressed at the edge", Harmless: []string{"DISABLED", "COMPRESSION_MODE_UNSPECIFIED"}},
	{Path: routeRules + "routeAction.wasmAction", Why: "no Wasm plugins (Service Extensions)"},
	{Path: routeRules + "routeAction.cdnPolicy.signedRequestMode", Why: whySigned, Harmless: []string{"DISABLED", "SIGNED_REQUEST_MODE_UNSPECIFIED"}},
	{Path: routeRules + "routeAction.cdnPolicy.signedRequestKeyset", Why: whySigned},
	{Path: routeRules + "routeAction.cdnPolicy.signedRequestMaximumExpirationTtl", Why: whySigned},
	{Path: routeRules + "routeAction.cdnPolicy.signedTokenOptions", Why: whySigned},
	{Path: routeRules + "routeAction.cdnPolicy.addSignatures", Why: whySigned},
}

// NotImplementedFields lists the Media CDN fields the reference does not
// implement, sorted by path.
func NotImplementedFields() []NotImplemented {
	out := slices.Clone(notImplemented)
	slices.SortFunc(out, func(a, b NotImplemented) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Unimplemented is a not-implemented field a configuration set.
type Unimplemented struct {
	Field string // where, as error paths name it ("service.requireTls")
	NotImplemented
}

// Message is the problem, as errors and warnings word it.
func (u Unimplemented) Message() string {
	return fmt.Sprintf("Media CDN field not implemented by the reference: %s (%s)", u.Field, u.Why)
}

// stripper walks a decoded resource against APIFields: it drops
// output-only fields (set by the API; an export has them) and
// not-implemented ones (recording those set), and leaves unknown fields to
// the strict decoder.
type stripper struct {
	fields map[string]APIField
	notImp map[string]NotImplemented
	found  []Unimplemented
}

func newStripper() *stripper {
	s := &stripper{fields: APIFields(), notImp: map[string]NotImplemented{}}
	for _, n := range notImplemented {
		s.notImp[n.Path] = n
	}
	return s
}

func (s *stripper) walk(v any, api, field string) {
	switch x := v.(type) {
	case map[string]any:
		if f := s.fields[api]; f.Kind == "map" {
			return // values of a map: no fields below
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			p := api + "." + k
			f, known := s.fields[p]
			if !known {
				continue // the strict decoder names it
			}
			kf := fielderr.Join(field, k)
			if f.Kind == "output-only" {
				delete(x, k)
				continue
			}
			if n, ok := s.notImp[p]; ok {
				if !harmless(x[k], n.Harmless) {
					s.found = append(s.found, Unimplemented{Field: kf, NotImplemented: n})
				}
				delete(x, k)
				continue
			}
			s.walk(x[k], p, kf)
		}
	case []any:
		for i, e := range x {
			s.walk(e, api+"[]", fmt.Sprintf("%s[%d]", field, i))
		}
	}
}

// harmless reports whether v leaves the feature off: a zero value (false,
// "", 0, null, empty) or one of ok.
func harmless(v any, ok []string) bool {
	switch x := v.(type) {
	case nil:
		return true
	case bool:
		return !x
	case string:
		return x == "" || slices.Contains(ok, x)
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// NotImplementedMarkdown is the list of not-implemented fields as the
// README shows it: one bullet per field.
func NotImplementedMarkdown() string {
	var b strings.Builder
	for _, n := range NotImplementedFields() {
		fmt.Fprintf(&b, "- `%s`: %s", n.Path, n.Why)
		if len(n.Harmless) > 0 {
			fmt.Fprintf(&b, " (accepted: %s)", strings.Join(n.Harmless, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}
