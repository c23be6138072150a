package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeconform/edgeconform/emulators/fault"
)

// Where a directive's value goes.
const (
	InBudget = "budget" // Rule (times, nth)
	InAction = "action" // Action
	InObject = "object" // the object's objects.Spec (path scripts only)
)

// Directive is one word of the vocabulary. The table Directives drives the
// path encoding (/_emu/NAME=VALUE/...), the abnormal ends (which Action
// field asks for which fault.End) and their validation, and is what the
// tables of docs/emulators.md and the JSON form (Action's and objects.Spec's field
// names) are tested against. Adding a fault is one entry here, its field on
// Action, and its implementation in the emulator.
type Directive struct {
	// Name is the JSON field name and the path key.
	Name string
	// In says where the value goes: InBudget, InAction or InObject.
	In string
	// Path is the path syntax ("drip=BYTES@INTERVAL"); "" when the
	// directive is JSON-only.
	Path string
	// Doc is a one-line description.
	Doc string
	// End is the fault.End of an abnormal end; Pending for the rest.
	End fault.End
	// H2Only marks faults only h2 has (rstStream, goAway).
	H2Only bool
	// DefaultCode is the h2 error code of an h2 fault without one.
	DefaultCode string
	// NeedsAfter marks ends that need afterBytes (truncate).
	NeedsAfter bool
	// PathOnly marks a path spelling of a nested JSON field (location=
	// for redirect.location).
	PathOnly bool

	// optional is true when the path form may come without "=VALUE".
	optional bool
	// parse applies a path value to the script.
	parse func(ps *PathScript, v string) error
	// cut reaches the end's *Cut on an Action.
	cut func(a *Action) **Cut
}

// Directives is the vocabulary, in the order of an exchange.
var Directives = []Directive{
	{Name: "times", In: InBudget, Path: "times=N", Doc: "fire for N matching requests", parse: func(ps *PathScript, v string) error {
		ps.Rule.Unlimited = false
		n, err := atoi(v)
		if err == nil && n < 1 {
			err = fmt.Errorf("must be >= 1")
		}
		ps.Rule.Times = n
		return err
	}},
	{Name: "nth", In: InBudget, Path: "nth=N", Doc: "skip the first N-1 matching requests", parse: func(ps *PathScript, v string) (err error) {
		ps.Rule.Match.Nth, err = atoi(v)
		return err
	}},
	{Name: "probability", In: InBudget, Path: "probability=P", Doc: "fire for a share P of the matching requests, chosen by seed", parse: func(ps *PathScript, v string) error {
		p, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number between 0 and 1", v)
		}
		ps.Rule.Probability = p
		return nil
	}},
	{Name: "seed", In: InBudget, Path: "seed=N", Doc: "which requests a probabilistic rule fires for", parse: func(ps *PathScript, v string) (err error) {
		ps.Rule.Seed, err = strconv.ParseUint(v, 10, 64)
		if err != nil {
			err = fmt.Errorf("%q is not a seed (an integer >= 0)", v)
		}
		return err
	}},
	{Name: "hold", In: InAction, Path: "hold=K | hold=NAME:K", Doc: "a barrier: wait until K requests arrived or the hold is released", parse: func(ps *PathScript, v string) (err error) {
		ps.Rule.Action.Hold, err = parseHold(v)
		return err
	}},
	{Name: "delay", In: InAction, Path: "delay=DURATION", Doc: "wait before the response headers", parse: func(ps *PathScript, v string) (err error) {
		ps.Rule.Action.Delay, err = duration(v)
		return err
	}},
	{Name: "status", In: InAction, Path: "status=CODE", Doc: "answer with this status instead of the object", parse: func(ps *PathScript, v string) (err error) {
		ps.Rule.Action.Status, err = atoi(v)
		return err
	}},
	{Name: "headers", In: InAction, Path: "h.NAME=VALUE", Doc: "set response header fields"},
	{Name: "body", In: InAction, Path: "body=TEXT", Doc: "a fixed body", parse: func(ps *PathScript, v string) error {
		ps.Rule.Action.Body = &v
		return nil
	}},
	{Name: "bodySize", In: InAction, Path: "bodySize=N", Doc: "a synthetic body of N bytes", parse: func(ps *PathScript, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		ps.Rule.Action.BodySize = &n
		return err
	}},
	{Name: "redirect", In: InAction, Path: "redirect=CODE location=URL", Doc: "a 3xx with Location", parse: func(ps *PathScript, v string) (err error) {
		ps.Rule.Action.Redirect = orRedirect(ps.Rule.Action.Redirect)
		ps.Rule.Action.Redirect.Status, err = atoi(v)
		return err
	}},
	{Name: "location", In: InAction, PathOnly: true, Path: "location=URL", Doc: "the redirect's Location (path form of redirect.location)", parse: func(ps *PathScript, v string) error {
		ps.Rule.Action.Redirect = orRedirect(ps.Rule.Action.Redirect)
		ps.Rule.Action.Redirect.Location = v
		return nil
	}},
	{Name: "omit", In: InAction, Path: "omit=NAME,NAME", Doc: "leave these headers out", parse: func(ps *PathScript, v string) error {
		ps.Rule.Action.Omit = strings.Split(v, ",")
		return nil
	}},
	{Name: "corrupt", In: InAction, Path: "corrupt=NAME,NAME", Doc: "send these headers malformed", parse: func(ps *PathScript, v string) error {
		ps.Rule.Action.Corrupt = strings.Split(v, ",")
		return nil
	}},
	{Name: "drip", In: InAction, Path: "drip=BYTES@INTERVAL", Doc: "pace the body", parse: func(ps *PathScript, v string) (err error) {
		ps.Rule.Action.Drip, err = parseDrip(v)
		return err
	}},
	{Name: "shape", In: InAction, Path: "shape=bandwidth:N,latency:D,jitter:D,sliceBytes:N,sliceDelay:D", Doc: "shape the body: bytes/s, latency per write, slices", parse: func(ps *PathScript, v string) (err error) {
		ps.Rule.Action.Shape, err = parseShaping(v)
		return err
	}},
	{Name: "stall", In: InAction, Path: "stall=N", Doc: "stop after N body bytes, hold the connection open", End: fault.Stalled,
		cut: func(a *Action) **Cut { return &a.Stall }},
	{Name: "truncate", In: InAction, Path: "truncate=N", Doc: "close the connection after N body bytes", End: fault.Truncated, NeedsAfter: true,
		cut: func(a *Action) **Cut { return &a.Truncate }},
	{Name: "reset", In: InAction, Path: "reset | reset=N", Doc: "TCP RST before the headers or after N body bytes", End: fault.Reset, optional: true,
		cut: func(a *Action) **Cut { return &a.Reset }},
	{Name: "rstStream", In: InAction, Path: "rstStream=CODE | rstStream=CODE@N", Doc: "h2 RST_STREAM with CODE", End: fault.RSTStream, H2Only: true, DefaultCode: "INTERNAL_ERROR",
		cut: func(a *Action) **Cut { return &a.RSTStream }},
	{Name: "goAway", In: InAction, Path: "goAway=CODE | goAway=CODE@N", Doc: "h2 GOAWAY with CODE, then close", End: fault.GoAway, H2Only: true, DefaultCode: "NO_ERROR",
		cut: func(a *Action) **Cut { return &a.GoAway }},
	{Name: "size", In: InObject, Path: "size=N", Doc: "the synthetic object's size", parse: func(ps *PathScript, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		ps.Object.Size = &n
		return err
	}},
	{Name: "version", In: InObject, Path: "version=V", Doc: "the object's version", parse: func(ps *PathScript, v string) error {
		ps.Object.Version = v
		return nil
	}},
	{Name: "etag", In: InObject, Path: "etag=VALUE", Doc: "the object's ETag", parse: func(ps *PathScript, v string) error {
		ps.Object.ETag = &v
		return nil
	}},
	{Name: "lastModified", In: InObject, Path: "lastModified=DATE", Doc: "the object's Last-Modified", parse: func(ps *PathScript, v string) error {
		ps.Object.LastModified = v
		return nil
	}},
	{Name: "cacheControl", In: InObject, Path: "cacheControl=VALUE", Doc: "the object's Cache-Control", parse: func(ps *PathScript, v string) error {
		ps.Object.CacheControl = v
		return nil
	}},
	{Name: "contentType", In: InObject, Path: "contentType=VALUE", Doc: "the object's Content-Type", parse: func(ps *PathScript, v string) error {
		ps.Object.ContentType = v
		return nil
	}},
	{Name: "noRanges", In: InObject, Path: "noRanges", Doc: "ignore Range and If-Range", optional: true, parse: func(ps *PathScript, _ string) error {
		ps.Object.NoRanges = true
		return nil
	}},
}

// Lookup returns the directive named name.
func Lookup(name string) (*Directive, bool) {
	i := slices.IndexFunc(Directives, func(d Directive) bool { return d.Name == name })
	if i < 0 {
		return nil, false
	}
	return &Directives[i], true
}

// EndDirectives are the directives that end an exchange abnormally.
func EndDirectives() []*Directive {
	var out []*Directive
	for i := range Directives {
		if Directives[i].cut != nil {
			out = append(out, &Directives[i])
		}
	}
	return out
}

// endNames is "stall, truncate, reset, rstStream and goAway".
func endNames() string {
	var names []string
	for _, d := range EndDirectives() {
		names = append(names, d.Name)
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
