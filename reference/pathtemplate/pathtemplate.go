// Package pathtemplate is Media CDN's path template grammar
// (pathTemplateMatch and pathTemplateRewrite), shared by configuration
// validation and the router so that both accept exactly the same templates.
package pathtemplate

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Template is a compiled pathTemplateMatch.
type Template struct {
	re   *regexp.Regexp
	vars []string
}

// Regular expressions for the operators. INT: "*" is any non-empty
// segment, "**" any run of characters, "/" included.
const (
	reSegment = `[^/]+`
	reAny     = `.*`
)

// Compile parses a path template (Google's URI-template grammar,
// as Envoy's uri_template implements it):
//
//	template = "/" [ element { "/" element } [ "/" ] ] [ suffix ]
//	element  = literal | "*" | "**" | "{" name [ "=" varpat ] "}"
//	varpat   = ( literal | "*" | "**" ) { "/" ( literal | "*" | "**" ) }
//
// A literal suffix may follow the last element only when it is an
// operator or variable (/**.m3u8); no operator or variable may follow
// "**". Literals are compared with the escaped path as written.
func Compile(t string, ignoreCase bool) (*Template, error) {
	if !strings.HasPrefix(t, "/") {
		return nil, fmt.Errorf("must start with /")
	}
	var b strings.Builder
	b.WriteString("(?s)")
	if ignoreCase {
		b.WriteString("(?i)")
	}
	b.WriteString("^/")
	pt := &Template{}
	seenAny := false // a "**" was seen: no operator may follow
	op := func(o string) error {
		if seenAny {
			return fmt.Errorf("%q after ** (** must be the last operator)", o)
		}
		if o == "**" {
			seenAny = true
			b.WriteString(reAny)
		} else {
			b.WriteString(reSegment)
		}
		return nil
	}
	rest := t[1:]
	for rest != "" {
		isLiteral := false
		switch {
		case strings.HasPrefix(rest, "**"):
			if err := op("**"); err != nil {
				return nil, err
			}
			rest = rest[2:]
		case rest[0] == '*':
			if err := op("*"); err != nil {
				return nil, err
			}
			rest = rest[1:]
		case rest[0] == '{':
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return nil, fmt.Errorf("unmatched {")
			}
			body := rest[1:end]
			rest = rest[end+1:]
			name, pat, hasPat := strings.Cut(body, "=")
			if !validName(name) {
				return nil, fmt.Errorf("bad variable name %q (want [a-zA-Z][a-zA-Z0-9_]*)", name)
			}
			if slices.Contains(pt.vars, name) {
				return nil, fmt.Errorf("variable %q is captured twice", name)
			}
			pt.vars = append(pt.vars, name)
			if !hasPat {
				pat = "*"
			}
			if pat == "" {
				return nil, fmt.Errorf("variable %q has an empty pattern", name)
			}
			b.WriteString("(?P<" + name + ">")
			for i, seg := range strings.Split(pat, "/") {
				if i > 0 {
					b.WriteString("/")
				}
				switch seg {
				case "*", "**":
					if err := op(seg); err != nil {
						return nil, err
					}
				default:
					if err := checkLiteral(seg); err != nil {
						return nil, fmt.Errorf("variable %q: %v", name, err)
					}
					b.WriteString(regexp.QuoteMeta(seg))
				}
			}
			b.WriteString(")")
		default:
			lit := rest
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				lit = rest[:i]
			}
			if err := checkLiteral(lit); err != nil {
				return nil, err
			}
			b.WriteString(regexp.QuoteMeta(lit))
			rest = rest[len(lit):]
			isLiteral = true
		}
		switch {
		case rest == "":
		case rest[0] == '/':
			b.WriteString("/")
			rest = rest[1:]
		case isLiteral:
			// unreachable: a literal runs to the next "/"
		default:
			// A literal suffix after an operator or variable: only in
			// the last segment.
			if strings.Contains(rest, "/") {
				return nil, fmt.Errorf("a literal may follow an operator or variable only in the last segment (%q)", rest)
			}
			if err := checkLiteral(rest); err != nil {
				return nil, err
			}
			b.WriteString(regexp.QuoteMeta(rest))
			rest = ""
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, err
	}
	pt.re = re
	return pt, nil
}

func checkLiteral(s string) error {
	if s == "" {
		return fmt.Errorf("empty segment")
	}
	if strings.ContainsAny(s, "*{}") {
		return fmt.Errorf("bad literal %q (a wildcard or variable must be a whole segment, or start the last one)", s)
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '_')) {
			return false
		}
	}
	return true
}

// Match matches a normalised path, returning the captures.
func (t *Template) Match(path string) (map[string]string, bool) {
	m := t.re.FindStringSubmatch(path)
	if m == nil {
		return nil, false
	}
	caps := make(map[string]string, len(t.vars))
	for i, name := range t.re.SubexpNames() {
		if name != "" {
			caps[name] = m[i]
		}
	}
	return caps, true
}

// Rewrite is a compiled pathTemplateRewrite: literal text and
// {var} references.
type Rewrite struct {
	parts []rewritePart
}

type rewritePart struct {
	text  string
	isVar bool
}

// CompileRewrite parses a pathTemplateRewrite ("/content/{format}/{id}").
func CompileRewrite(s string) (*Rewrite, error) {
	if !strings.HasPrefix(s, "/") {
		return nil, fmt.Errorf("must start with /")
	}
	rw := &Rewrite{}
	for s != "" {
		i := strings.IndexAny(s, "{}*")
		if i < 0 {
			rw.parts = append(rw.parts, rewritePart{text: s})
			break
		}
		if i > 0 {
			rw.parts = append(rw.parts, rewritePart{text: s[:i]})
		}
		if s[i] != '{' {
			return nil, fmt.Errorf("unexpected %q (only {variable} references may be substituted)", s[i])
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return nil, fmt.Errorf("unmatched {")
		}
		name := s[i+1 : i+end]
		if !validName(name) {
			return nil, fmt.Errorf("bad variable reference {%s}", name)
		}
		rw.parts = append(rw.parts, rewritePart{text: name, isVar: true})
		s = s[i+end+1:]
	}
	return rw, nil
}

// Vars are the variables the rewrite references.
func (rw *Rewrite) Vars() []string {
	var v []string
	for _, p := range rw.parts {
		if p.isVar {
			v = append(v, p.text)
		}
	}
	return v
}

// Expand substitutes the captures (as matched: still escaped).
func (rw *Rewrite) Expand(caps map[string]string) string {
	var b strings.Builder
	for _, p := range rw.parts {
		if p.isVar {
			b.WriteString(caps[p.text])
		} else {
			b.WriteString(p.text)
		}
	}
	return b.String()
}

// Vars are the template's variable names in order.
func (t *Template) Vars() []string { return slices.Clone(t.vars) }
