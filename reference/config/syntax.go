package config

import (
	"github.com/edgeconform/edgeconform/reference/pathtemplate"
	"unicode/utf8"

	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Syntax checks for the strings in a configuration. Each returns "" when
// s is fine, else the problem, phrased to follow the field path.

// nameSyntax is the syntax of origin and service names.
const nameSyntax = `[a-zA-Z][a-zA-Z0-9_-]*`

var nameRE = regexp.MustCompile(`^` + nameSyntax + `$`)

// templateVarRE is the syntax of a path template variable name.
var templateVarRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// regionRE is the syntax of a flexible-shielding region (AFRICA_SOUTH1).
var regionRE = regexp.MustCompile(`^[A-Z0-9_]+$`)

func checkName(s string) string {
	switch {
	case s == "":
		return "is required"
	case len(s) > maxNameLen:
		return fmt.Sprintf("must be 1 to %d characters long, got %d", maxNameLen, len(s))
	case !nameRE.MatchString(s):
		return fmt.Sprintf("must match %s (a letter, then letters, digits, _ or -), got %q", nameSyntax, s)
	}
	return ""
}

// checkLabel checks one DNS label (RFC 1123: letters, digits and
// hyphens, not at either end, 1 to 63 characters).
func checkLabel(l string) string {
	switch {
	case l == "":
		return "has an empty label (two dots in a row, or a dot at an end)"
	case len(l) > 63:
		return fmt.Sprintf("has a label longer than 63 characters (%d)", len(l))
	case l[0] == '-' || l[len(l)-1] == '-':
		return fmt.Sprintf("has a label %q that starts or ends with '-'", l)
	}
	for _, c := range l {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Sprintf("has a label %q with a character %s that is not a letter, digit or '-'%s", l, describeRune(c), idnHint(c))
		}
	}
	return ""
}

// checkHostname checks a DNS host name of at least minLabels labels.
func checkHostname(s string, minLabels int) string {
	if len(s) > 253 {
		return fmt.Sprintf("must be at most 253 characters long, got %d", len(s))
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if p := checkLabel(l); p != "" {
			return p
		}
	}
	if len(labels) < minLabels {
		return ""
	}
	if allDigits(labels[len(labels)-1]) {
		return "is neither a valid IPv4 address nor a host name (its last label is numeric)"
	}
	return ""
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// checkOriginAddress checks EdgeCacheOrigin.originAddress: an FQDN, an
// IPv4 address, an IPv6 address without brackets, or gs://BUCKET; no
// scheme, path or port.
func checkOriginAddress(s string) string {
	if s == "" {
		return "is required"
	}
	if b, ok := strings.CutPrefix(s, "gs://"); ok {
		if i := strings.IndexByte(b, '/'); i >= 0 {
			return fmt.Sprintf("must not include a path (%q): write gs://BUCKET only", b[i:])
		}
		if p := checkBucket(b); p != "" {
			return "has a bad Cloud Storage bucket name: " + p
		}
		return ""
	}
	if i := strings.Index(s, "://"); i >= 0 {
		return fmt.Sprintf("must not include a scheme (%q): write the host only and set protocol", s[:i+3])
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return fmt.Sprintf("must not include a path (%q): write the host only", s[i:])
	}
	if strings.HasPrefix(s, "[") {
		return fmt.Sprintf("must be written without brackets (an IPv6 address is bare, the port goes in port), got %q", s)
	}
	if a, err := netip.ParseAddr(s); err == nil {
		if a.Zone() != "" {
			return fmt.Sprintf("must not have an IPv6 zone, got %q", s)
		}
		return ""
	}
	if strings.Count(s, ":") == 1 {
		if _, port, _ := strings.Cut(s, ":"); allDigits(port) {
			return fmt.Sprintf("must not include a port (%q): set port instead", ":"+port)
		}
	}
	if strings.Contains(s, ":") {
		return fmt.Sprintf("is not a valid IPv6 address, got %q", s)
	}
	name := strings.TrimSuffix(s, ".")
	if !strings.Contains(name, ".") {
		return fmt.Sprintf("must be a fully qualified domain name (e.g. origin.example.com), an IP address or gs://BUCKET, got %q", s)
	}
	if p := checkHostname(name, 2); p != "" {
		return fmt.Sprintf("is not a valid FQDN, IP address or gs://BUCKET: %q %s", s, p)
	}
	return ""
}

// checkBucket checks a Cloud Storage bucket name: 3 to 63 characters (222
// with dots, each dot-separated part at most 63), lowercase letters,
// digits, '-', '_' and '.', starting and ending with a letter or digit,
// not an IP address, not starting with "goog", not containing "google".
func checkBucket(b string) string {
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	switch {
	case b == "":
		return "is empty (want gs://BUCKET)"
	case len(b) < 3:
		return fmt.Sprintf("%q must be at least 3 characters long", b)
	case !strings.Contains(b, ".") && len(b) > 63:
		return fmt.Sprintf("%q must be at most 63 characters long (222 with dots)", b)
	case len(b) > 222:
		return fmt.Sprintf("%q must be at most 222 characters long", b)
	case !alnum(b[0]) || !alnum(b[len(b)-1]):
		return fmt.Sprintf("%q must start and end with a lowercase letter or digit", b)
	}
	for _, c := range b {
		if c >= utf8.RuneSelf || !alnum(byte(c)) && c != '-' && c != '_' && c != '.' {
			return fmt.Sprintf("%q may hold only lowercase letters, digits, '-', '_' and '.', not %s", b, describeRune(c))
		}
	}
	for part := range strings.SplitSeq(b, ".") {
		if part == "" {
			return fmt.Sprintf("%q has an empty dot-separated part", b)
		}
		if len(part) > 63 {
			return fmt.Sprintf("%q has a dot-separated part longer than 63 characters", b)
		}
	}
	if a, err := netip.ParseAddr(b); err == nil && a.Is4() {
		return fmt.Sprintf("%q must not be an IP address", b)
	}
	if strings.HasPrefix(b, "goog") || strings.Contains(b, "google") {
		return fmt.Sprintf("%q must not start with \"goog\" or contain \"google\"", b)
	}
	return ""
}

// checkHostPattern checks a host rule's host: "*", a host name, or a host
// name with "*" as its whole first or last label (*.example.com, foo.*).
func checkHostPattern(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if s == "*" {
		return ""
	}
	if strings.Contains(s, ":") {
		return fmt.Sprintf("must not include a port (the request's port is ignored when matching), got %q", s)
	}
	if len(s) > 253 {
		return fmt.Sprintf("must be at most 253 characters long, got %d", len(s))
	}
	labels := strings.Split(s, ".")
	stars := 0
	for i, l := range labels {
		if l == "*" {
			stars++
			if i != 0 && i != len(labels)-1 {
				return fmt.Sprintf("may have '*' only as its whole first or last label (*.example.com, foo.*), got %q", s)
			}
			continue
		}
		if strings.Contains(l, "*") {
			return fmt.Sprintf("may have '*' only as a whole label (*.example.com, foo.*), got %q", s)
		}
		if p := checkLabel(l); p != "" {
			return fmt.Sprintf("is not a valid host: %q %s", s, p)
		}
	}
	if stars > 1 {
		return fmt.Sprintf("may have only one wildcard label, got %q", s)
	}
	return ""
}

// checkHostPort checks a Host value: a host name or IP address, IPv6 in
// brackets, optionally with :port; no scheme or path; 1 to 255 characters.
func checkHostPort(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case len(s) > maxHostLen:
		return fmt.Sprintf("must be 1 to %d characters long, got %d", maxHostLen, len(s))
	case strings.Contains(s, "://"):
		return fmt.Sprintf("must not include a scheme, got %q: write the host (and :port) only", s)
	case strings.Contains(s, "/"):
		return fmt.Sprintf("must not include a path, got %q: write the host (and :port) only", s)
	}
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return fmt.Sprintf("has an unclosed '[', got %q", s)
		}
		a, err := netip.ParseAddr(s[1:end])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Sprintf("has an invalid IPv6 address in brackets, got %q", s)
		}
		rest := s[end+1:]
		if rest == "" {
			return ""
		}
		p, ok := strings.CutPrefix(rest, ":")
		if !ok {
			return fmt.Sprintf("must be [IPv6] or [IPv6]:port, got %q", s)
		}
		return checkPortString(p)
	}
	switch strings.Count(s, ":") {
	case 0:
	case 1:
		host, port, _ = strings.Cut(s, ":")
		if p := checkPortString(port); p != "" {
			return p
		}
	default:
		return fmt.Sprintf("must write an IPv6 address in brackets ([2001:db8::1]:8443), got %q", s)
	}
	if a, err := netip.ParseAddr(host); err == nil && a.Is4() {
		return ""
	}
	if p := checkHostname(strings.TrimSuffix(host, "."), 1); p != "" {
		return fmt.Sprintf("is not a valid host: %q %s", host, p)
	}
	return ""
}

func checkPortString(p string) string {
	n, err := strconv.Atoi(p)
	if !allDigits(p) || err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("has a bad port %q: must be between 1 and 65535", p)
	}
	return ""
}

// checkToken checks an HTTP header name (an RFC 9110 token).
func checkToken(s string) string {
	if s == "" {
		return "is required"
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return fmt.Sprintf("must be a valid header name (letters, digits and !#$%%&'*+-.^_`|~), got %q", s)
		}
	}
	return ""
}

func isTchar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// checkHeaderValue rejects CR, LF and other control characters (tab is
// allowed), which would split or corrupt the header.
func checkHeaderValue(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return fmt.Sprintf("must not contain CR, LF or other control characters, got %q at byte %d", c, i)
		}
	}
	return ""
}

// checkPath checks a path used for matching or rewriting: it starts with
// '/', is at most 1024 characters, and holds no query, fragment,
// whitespace or control characters.
func checkPath(s string) string {
	switch {
	case s == "":
		return "must not be empty"
	case s[0] != '/':
		return fmt.Sprintf("must start with '/', got %q", s)
	case len(s) > maxPathLen:
		return fmt.Sprintf("must be at most %d characters long, got %d", maxPathLen, len(s))
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '?' || c == '#':
			return fmt.Sprintf("must be a path without a query or fragment, got %q at byte %d", c, i)
		case c <= ' ' || c == 0x7f:
			return fmt.Sprintf("must not contain whitespace or control characters, got %q at byte %d", c, i)
		}
	}
	return ""
}

// parsePathTemplate checks a pathTemplateMatch with the router's own
// grammar (package pathtemplate) and returns its variable names; at most
// maxTemplateVars variables.
func parsePathTemplate(s string) (vars []string, problem string) {
	if p := checkPath(s); p != "" {
		return nil, p
	}
	t, err := pathtemplate.Compile(s, false)
	if err != nil {
		return nil, fmt.Sprintf("is not a valid path template (%v), got %q", err, s)
	}
	if vars = t.Vars(); len(vars) > maxTemplateVars {
		return nil, fmt.Sprintf("must have at most %d variables, got %d", maxTemplateVars, len(vars))
	}
	return vars, ""
}

// parseTemplateRewrite checks a pathTemplateRewrite ("/content/{format}/
// {id}") and returns the variables it references.
func parseTemplateRewrite(s string) (refs []string, problem string) {
	if p := checkPath(s); p != "" {
		return nil, p
	}
	rw, err := pathtemplate.CompileRewrite(s)
	if err != nil {
		return nil, fmt.Sprintf("is not a valid template rewrite (%v), got %q", err, s)
	}
	return rw.Vars(), ""
}

// fmtDur writes d as the API does ("5s", "0.2s").
func fmtDur(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// describeRune names a character for a message: 'ü' (U+00FC), or, for a
// byte that is not UTF-8, the byte.
func describeRune(c rune) string {
	if c == utf8.RuneError {
		return "that is not UTF-8"
	}
	if c < utf8.RuneSelf {
		return fmt.Sprintf("%q", c)
	}
	return fmt.Sprintf("%q (%U)", c, c)
}

// idnHint tells how to write a non-ASCII name.
func idnHint(c rune) string {
	if c >= utf8.RuneSelf {
		return " (write an internationalised name as its A-labels, xn--...)"
	}
	return ""
}
