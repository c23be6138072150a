package routing

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/edgeconform/edgeconform/reference/config"
)

// redirectCodes maps urlRedirect.redirectResponseCode to a status; the
// empty value is the default, MOVED_PERMANENTLY_DEFAULT.
var redirectCodes = map[string]int{
	"":                          http.StatusMovedPermanently,
	"MOVED_PERMANENTLY_DEFAULT": http.StatusMovedPermanently,
	"FOUND":                     http.StatusFound,
	"SEE_OTHER":                 http.StatusSeeOther,
	"TEMPORARY_REDIRECT":        http.StatusTemporaryRedirect,
	"PERMANENT_REDIRECT":        http.StatusPermanentRedirect,
}

type redirectSpec struct {
	status     int
	host       string
	path       string
	prefix     string
	https      bool
	stripQuery bool
}

func compileRedirect(u *config.URLRedirect, field string) (*redirectSpec, error) {
	code, ok := redirectCodes[strings.ToUpper(u.RedirectResponseCode)]
	if !ok {
		return nil, fmt.Errorf("%s.redirectResponseCode: unknown code %q", field, u.RedirectResponseCode)
	}
	if u.PathRedirect != "" && u.PrefixRedirect != "" {
		return nil, fmt.Errorf("%s: pathRedirect and prefixRedirect are mutually exclusive", field)
	}
	if u.PathRedirect != "" && !strings.HasPrefix(u.PathRedirect, "/") {
		return nil, fmt.Errorf("%s.pathRedirect: must start with /", field)
	}
	if u.PrefixRedirect != "" && !strings.HasPrefix(u.PrefixRedirect, "/") {
		return nil, fmt.Errorf("%s.prefixRedirect: must start with /", field)
	}
	if strings.ContainsAny(u.HostRedirect, "/?#@ ") {
		return nil, fmt.Errorf("%s.hostRedirect: %q is not a host", field, u.HostRedirect)
	}
	return &redirectSpec{
		status: code, host: u.HostRedirect, path: u.PathRedirect, prefix: u.PrefixRedirect,
		https: u.HTTPSRedirect, stripQuery: u.StripQuery,
	}, nil
}

// build makes the Location for a request that matched with m; path is the
// normalised request path.
func (rd *redirectSpec) build(req *http.Request, path, rawQuery string, m *matchRule) *Redirect {
	scheme := "http"
	if req.TLS != nil {
		scheme = "https"
	}
	host := req.Host
	if host == "" && req.URL != nil {
		host = req.URL.Host
	}
	if rd.https && scheme != "https" {
		scheme = "https"
		// INT: the request's port belonged to the other scheme.
		host = hostOnly(host)
	}
	if rd.host != "" {
		host = rd.host
	}
	switch {
	case rd.path != "":
		path = rd.path
	case rd.prefix != "":
		path = m.replacePrefix(path, rd.prefix)
	}
	loc := scheme + "://" + host + path
	if rawQuery != "" && !rd.stripQuery {
		sep := "?"
		if strings.Contains(path, "?") { // a pathRedirect with its own query
			sep = "&"
		}
		loc += sep + rawQuery
	}
	return &Redirect{Status: rd.status, Location: loc}
}

// hostOnly strips the port from a Host header, keeping IPv6 brackets.
func hostOnly(host string) string {
	h := stripPort(host)
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}
