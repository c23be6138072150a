package rules

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// FieldError and Errors are how every bad input is reported.
type (
	FieldError = fielderr.FieldError
	Errors     = fielderr.Errors
)

// AsErrors returns err's field errors if it holds any.
func AsErrors(err error) (Errors, bool) { return fielderr.As(err) }

// Validate checks the rule on its own; field paths start with prefix (e.g.
// "rules[0]", or "" for none). Listener-dependent checks are the caller's.
func (r *Rule) Validate(prefix string) error {
	c := &fielderr.List{Prefix: prefix}
	if r.ID != "" && !validID(r.ID) {
		c.Add("id", "must be 1-64 characters of letters, digits, '-', '_' or '.', got %q", r.ID)
	}
	if r.Times < 0 {
		c.Add("times", "must be >= 0 (0 means once), got %d", r.Times)
	}
	if r.Unlimited && r.Times != 0 {
		c.Add("times", "cannot be set together with unlimited")
	}
	if r.Probability < 0 || r.Probability > 1 {
		c.Add("probability", "must be between 0 and 1 (a share of matching requests), got %v", r.Probability)
	}
	if r.Seed != 0 && r.Probability == 0 {
		c.Add("seed", "only means something with probability")
	}
	r.Match.check(c)
	r.Action.check(c)
	return c.Err()
}

func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, ch := range id {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.') {
			return false
		}
	}
	return true
}

func (m *Match) check(c *fielderr.List) {
	if m.Method != "" && !validToken(m.Method) {
		c.Add("match.method", "is not an HTTP method token: %q", m.Method)
	}
	if m.Path != "" && !strings.HasPrefix(m.Path, "/") {
		c.Add("match.path", "must start with '/', got %q", m.Path)
	}
	if m.PathPrefix != "" && !strings.HasPrefix(m.PathPrefix, "/") {
		c.Add("match.pathPrefix", "must start with '/', got %q", m.PathPrefix)
	}
	if m.Path != "" && m.PathPrefix != "" {
		c.Add("match.pathPrefix", "cannot be set together with match.path")
	}
	for name := range m.Headers {
		if !validToken(name) {
			c.Add("match.headers", "%q is not a header name", name)
		}
	}
	if m.Nth < 0 {
		c.Add("match.nth", "must be >= 1 (or 0 for the first), got %d", m.Nth)
	}
}

func (a *Action) check(c *fielderr.List) {
	if h := a.Hold; h != nil {
		if h.Count < 0 {
			c.Add("action.hold.count", "must be >= 0, got %d", h.Count)
		}
		if h.Timeout < 0 {
			c.Add("action.hold.timeout", "must not be negative")
		}
		if h.Name != "" && !validID(h.Name) {
			c.Add("action.hold.name", "must be 1-64 characters of letters, digits, '-', '_' or '.', got %q", h.Name)
		}
	}
	if a.Delay < 0 {
		c.Add("action.delay", "must not be negative")
	}
	if a.Status != 0 && (a.Status < 100 || a.Status > 599) {
		c.Add("action.status", "must be 100-599, got %d", a.Status)
	}
	if a.Status >= 100 && a.Status < 200 {
		c.Add("action.status", "informational statuses (1xx) cannot be a final answer, got %d", a.Status)
	}
	for name, v := range a.Headers {
		if p := objects.HeaderProblem(name, v); p != "" {
			c.Add("action.headers."+name, "%s", p)
		}
	}
	if a.Body != nil && a.BodySize != nil {
		c.Add("action.bodySize", "cannot be set together with action.body")
	}
	if a.BodySize != nil && *a.BodySize < 0 {
		c.Add("action.bodySize", "must be >= 0, got %d", *a.BodySize)
	}
	if r := a.Redirect; r != nil {
		if a.Status != 0 || a.Body != nil || a.BodySize != nil {
			c.Add("action.redirect", "cannot be combined with action.status, action.body or action.bodySize")
		}
		if r.Status != 0 && !slices.Contains([]int{301, 302, 303, 307, 308}, r.Status) {
			c.Add("action.redirect.status", "must be 301, 302, 303, 307 or 308, got %d", r.Status)
		}
		if u, err := url.Parse(r.Location); r.Location == "" || err != nil || objects.BadValue(r.Location) {
			c.Add("action.redirect.location", "must be a URL, got %q", r.Location)
		} else if u.Scheme != "" && u.Host == "" {
			c.Add("action.redirect.location", "absolute URL has no host: %q", r.Location)
		}
	}
	checkHeaderList(c, "action.omit", a.Omit)
	checkHeaderList(c, "action.corrupt", a.Corrupt)
	for _, h := range a.Omit {
		if slices.ContainsFunc(a.Corrupt, func(o string) bool { return strings.EqualFold(o, h) }) {
			c.Add("action.corrupt", "%s is also in action.omit", h)
		}
	}
	if d := a.Drip; d != nil {
		if d.Bytes <= 0 {
			c.Add("action.drip.bytes", "must be > 0, got %d", d.Bytes)
		}
		if d.Every <= 0 {
			c.Add("action.drip.every", "must be a positive duration")
		}
	}
	if a.Shape != nil {
		a.Shape.Check(c, "action.shape", true)
	}
	set := 0
	for _, d := range EndDirectives() {
		cut := *d.cut(a)
		if cut == nil {
			continue
		}
		set++
		field := "action." + d.Name
		if cut.AfterBytes != nil && *cut.AfterBytes < 0 {
			c.Add(field+".afterBytes", "must be >= 0, got %d", *cut.AfterBytes)
		}
		if d.NeedsAfter && cut.AfterBytes == nil {
			c.Add(field+".afterBytes", "is required (%s happens after that many body bytes)", d.Name)
		}
		switch _, ok := H2Code(cut.Code); {
		case cut.Code != "" && d.DefaultCode == "":
			c.Add(field+".code", "only the h2 faults take a code")
		case cut.Code != "" && !ok:
			c.Add(field+".code", "unknown h2 error code %q (want one of %s)", cut.Code, strings.Join(h2Codes, ", "))
		}
	}
	if set > 1 {
		c.Add("action", "at most one of %s may be set", endNames())
	}
}

func checkHeaderList(c *fielderr.List, field string, names []string) {
	for i, h := range names {
		if !slices.ContainsFunc(faultHeaders, func(f string) bool { return strings.EqualFold(f, h) }) {
			c.Add(fmt.Sprintf("%s[%d]", field, i), "%q cannot be omitted or corrupted (want one of %s)", h, strings.Join(faultHeaders, ", "))
		}
	}
}

// validToken reports whether s is an RFC 9110 token (methods, header names).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}

func isTokenChar(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

// CanonicalFaultHeader returns the canonical spelling of an omittable header.
func CanonicalFaultHeader(name string) string {
	if strings.EqualFold(name, "ETag") {
		return "Etag" // net/http's canonical key
	}
	return http.CanonicalHeaderKey(name)
}
