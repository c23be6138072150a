package rules

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
)

// PathPrefix starts a path-encoded script: /_emu/KEY=VALUE/.../object/path.
const PathPrefix = "/_emu/"

// PathScript is a rule and object overrides encoded in a request path.
type PathScript struct {
	// Rule holds the actions; its budget is Times/Nth from the path and
	// Unlimited when the path gives no times=.
	Rule Rule
	// Object overrides the object's spec (size=, version=, ...).
	Object objects.Spec
	// ObjectPath is the path after the directives; the object served is
	// the one at this path.
	ObjectPath string
}

// ParsePath reads the directives of a path-encoded script. escapedPath is
// the request's escaped path (URL.EscapedPath), so a value may carry an
// encoded '/' (location=https:%2F%2Fhost%2Fx). ok is false when the path
// does not start with PathPrefix; err names the first bad directive.
//
// Directives (each one path segment):
//
//	status=503  delay=2s  hold=K | hold=NAME:K  times=N  nth=N
//	body=TEXT  bodySize=N  location=URL  redirect=301|302|303|307|308
//	h.NAME=VALUE (response header)  omit=ETag,Date  corrupt=Content-Length
//	drip=BYTES@INTERVAL  stall=N  truncate=N  reset | reset=N
//	rstStream=CODE | rstStream=CODE@N  goAway=CODE | goAway=CODE@N
//	size=N  version=V  etag=VALUE  lastModified=DATE  cacheControl=VALUE
//	contentType=VALUE  noRanges
//
// The first segment that is not a directive starts the object path; "-"
// ends the directives explicitly (/_emu/status=503/-/status=x is object
// "/status=x").
func ParsePath(escapedPath string) (ps PathScript, ok bool, err error) {
	if !strings.HasPrefix(escapedPath, PathPrefix) {
		return ps, false, nil
	}
	ps.Rule = Rule{ID: "path", Unlimited: true}
	segs := strings.Split(strings.TrimPrefix(escapedPath, PathPrefix), "/")
	i := 0
	for ; i < len(segs); i++ {
		raw := segs[i]
		if raw == "-" {
			i++
			break
		}
		seg, uerr := url.PathUnescape(raw)
		if uerr != nil {
			return ps, true, fmt.Errorf("path directive %q: %w", raw, uerr)
		}
		key, val, hasVal := strings.Cut(seg, "=")
		if !isDirective(key) {
			break
		}
		if err := ps.apply(key, val, hasVal); err != nil {
			return ps, true, fmt.Errorf("path directive %q: %w", seg, err)
		}
	}
	rest := "/" + strings.Join(segs[i:], "/")
	if p, uerr := url.PathUnescape(rest); uerr == nil {
		rest = p
	}
	ps.ObjectPath = rest
	ps.Object.Path = rest
	if err := ps.Rule.Validate("path"); err != nil {
		return ps, true, err
	}
	if err := ps.Object.Validate("path.object"); err != nil {
		return ps, true, err
	}
	return ps, true, nil
}

// pathDirective returns the directive a path key names: a Directive with
// a path form, or "h.NAME" (a response header).
func pathDirective(key string) (*Directive, bool) {
	if strings.HasPrefix(key, "h.") && len(key) > 2 {
		return Lookup("headers")
	}
	d, ok := Lookup(key)
	if !ok || d.Path == "" || d.Name == "headers" {
		return nil, false
	}
	return d, true
}

func isDirective(key string) bool {
	_, ok := pathDirective(key)
	return ok
}

func (ps *PathScript) apply(key, val string, hasVal bool) error {
	d, _ := pathDirective(key)
	if !hasVal && !d.optional {
		return fmt.Errorf("needs a value (%s=...)", key)
	}
	switch {
	case d.Name == "headers":
		a := &ps.Rule.Action
		if a.Headers == nil {
			a.Headers = map[string]string{}
		}
		a.Headers[strings.TrimPrefix(key, "h.")] = val
		return nil
	case d.cut != nil:
		c, err := parseCut(val, d.H2Only)
		*d.cut(&ps.Rule.Action) = c
		return err
	}
	return d.parse(ps, val)
}

func orRedirect(r *Redirect) *Redirect {
	if r == nil {
		return &Redirect{}
	}
	return r
}

func atoi(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return n, nil
}

func duration(s string) (Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration like 250ms or 2s", s)
	}
	return Duration(d), nil
}

// parseHold reads "K" or "NAME:K".
func parseHold(v string) (*Hold, error) {
	name, count, found := strings.Cut(v, ":")
	if !found {
		name, count = "", v
	}
	k, err := atoi(count)
	if err != nil {
		return nil, err
	}
	return &Hold{Name: name, Count: k}, nil
}

// parseDrip reads "BYTES@INTERVAL".
func parseDrip(v string) (*Drip, error) {
	b, every, found := strings.Cut(v, "@")
	if !found {
		return nil, fmt.Errorf("want BYTES@INTERVAL, e.g. 1024@100ms")
	}
	n, err := atoi(b)
	if err != nil {
		return nil, err
	}
	d, err := duration(every)
	if err != nil {
		return nil, err
	}
	return &Drip{Bytes: n, Every: d}, nil
}

// parseCut reads "", "N", or with a code "CODE" and "CODE@N".
func parseCut(v string, withCode bool) (*Cut, error) {
	c := &Cut{}
	if withCode {
		code, after, found := strings.Cut(v, "@")
		c.Code = code
		if !found {
			return c, nil
		}
		v = after
	}
	if v == "" {
		return c, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%q is not a byte count", v)
	}
	c.AfterBytes = &n
	return c, nil
}
