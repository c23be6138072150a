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
	c := &compiler{t: &Template{}}
	c.b.WriteString("(?s)")
	if ignoreCase {
		c.b.WriteString("(?i)")
	}
	c.b.WriteString("^/")
	rest := t[1:]
	for rest != "" {
		var isLiteral bool
		var err error
		if rest, isLiteral, err = c.element(rest); err != nil {
			return nil, err
		}
		if rest, err = c.after(rest, isLiteral); err != nil {
			return nil, err
		}
	}
	c.b.WriteString("$")
	re, err := regexp.Compile(c.b.String())
	if err != nil {
		return nil, err
	}
	c.t.re = re
	return c.t, nil
}

// compiler is the state of one Compile: the regular expression so far,
// the template's variables, and whether a "**" was seen.
type compiler struct {
	b       strings.Builder
	t       *Template
	seenAny bool // a "**" was seen: no operator may follow
}

// op writes the operator o ("*" or "**").
func (c *compiler) op(o string) error {
	if c.seenAny {
		return fmt.Errorf("%q after ** (** must be the last operator)", o)
	}
	if o == "**" {
		c.seenAny = true
		c.b.WriteString(reAny)
	} else {
		c.b.WriteString(reSegment)
	}
	return nil
}

// element compiles the element rest starts with and returns what follows
// it, and whether it was a literal.
func (c *compiler) element(rest string) (string, bool, error) {
	switch {
	case strings.HasPrefix(rest, "**"):
		return rest[2:], false, c.op("**")
	case rest[0] == '*':
		return rest[1:], false, c.op("*")
	case rest[0] == '{':
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return "", false, fmt.Errorf("unmatched {")
		}
		return rest[end+1:], false, c.variable(rest[1:end])
	}
	lit := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		lit = rest[:i]
	}
	if err := checkLiteral(lit); err != nil {
		return "", false, err
	}
	c.b.WriteString(regexp.QuoteMeta(lit))
	return rest[len(lit):], true, nil
}

// variable compiles the variable "{body}": name [ "=" varpat ].
func (c *compiler) variable(body string) error {
	name, pat, hasPat := strings.Cut(body, "=")
	if !validName(name) {
		return fmt.Errorf("bad variable name %q (want [a-zA-Z][a-zA-Z0-9_]*)", name)
	}
	if slices.Contains(c.t.vars, name) {
		return fmt.Errorf("variable %q is captured twice", name)
	}
	c.t.vars = append(c.t.vars, name)
	if !hasPat {
		pat = "*"
	}
	if pat == "" {
		return fmt.Errorf("variable %q has an empty pattern", name)
	}
	c.b.WriteString("(?P<" + name + ">")
	for i, seg := range strings.Split(pat, "/") {
		if i > 0 {
			c.b.WriteString("/")
		}
		switch seg {
		case "*", "**":
			if err := c.op(seg); err != nil {
				return err
			}
		default:
			if err := checkLiteral(seg); err != nil {
				return fmt.Errorf("variable %q: %v", name, err)
			}
			c.b.WriteString(regexp.QuoteMeta(seg))
		}
	}
	c.b.WriteString(")")
	return nil
}

// after compiles what follows an element: nothing, the "/" before the
// next one, or a literal suffix of the last segment (/**.m3u8).
func (c *compiler) after(rest string, isLiteral bool) (string, error) {
	switch {
	case rest == "":
		return "", nil
	case rest[0] == '/':
		c.b.WriteString("/")
		return rest[1:], nil
	case isLiteral:
		// unreachable: a literal runs to the next "/"
		return rest, nil
	}
	// A literal suffix after an operator or variable: only in the last
	// segment.
	if strings.Contains(rest, "/") {
		return "", fmt.Errorf("a literal may follow an operator or variable only in the last segment (%q)", rest)
	}
	if err := checkLiteral(rest); err != nil {
		return "", err
	}
	c.b.WriteString(regexp.QuoteMeta(rest))
	return "", nil
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
