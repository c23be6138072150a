// Package caddy generates a Caddy 2 (Debian package caddy, 2.6)
// configuration from the neutral topology (suites/topology.Neutral): one
// JSON config (Caddy's native format, `caddy run --config caddy.json`)
// whose HTTP server has a route per host rule and path-matcher route, each
// proxying to its origin chain with the reverse_proxy handler.
//
// What maps (rule IDs from behaviour.md):
//   - MTH: host rules (exact, then the longest wildcards, then "*"), routes
//     by ascending priority, prefix/full-path match rules as case-sensitive
//     path_regexp matchers ((?i) with ignoreCase), header and query match
//     rules, routeMethods (405 with Allow), a GET with a body (400),
//     pathPrefixRewrite, 404 where no route matches.
//   - ATT: the attempt loop is unrolled: each attempt is a reverse_proxy
//     handler whose handle_response, on a status matching the origin's
//     retryConditions (ATT-5), runs the next attempt (same origin while its
//     maxAttempts last, then the failover), capped at 4 (ATT-3); the last
//     one answers 502 (ATT-7). Unsafe methods get 502 instead of another
//     attempt (ATT-1/2). CONNECT_FAILURE retries the same origin through
//     the handler's own load-balancing retries, and fails over through the
//     server's error routes (a 502/504 of the route).
//   - TMO: connectTimeout is the transport's dial_timeout and
//     response_header_timeout; readTimeout its read_timeout.
//   - HST/PRT: Host is the origin's hostRewrite, else the route's, else
//     the client's; SNI (tls.server_name) is that Host and the certificate
//     is verified against it (the emulators' CA); HTTP is HTTP/1.1, HTTPS
//     HTTP/1.1 over TLS, HTTP2 h2 only (versions ["2"]: no fallback).
//   - HST-6: route requestHeadersToAdd in a headers handler, the origin's
//     in its own reverse_proxy (applied last, so they take precedence).
//
// What Caddy cannot express is declared as Limits (see limits.go).
package caddy

import (
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/edgeconform/edgeconform/suites/peers/genutil"
	"github.com/edgeconform/edgeconform/suites/topology"
)

type obj = map[string]any

// Options are what the configuration needs besides the topology.
type Options struct {
	// Listen is the client-facing address, 127.0.0.1:PORT.
	Listen string
	// CAFile is the PEM file of the emulators' CA (origin TLS).
	CAFile string
	// AccessLog, if set, is the file of the JSON access log.
	AccessLog string
	// Storage is the directory of Caddy's own storage (certificates,
	// locks): inside the run's temporary directory.
	Storage string
	// Resolve maps origin host names to the IPs to dial.
	Resolve map[string]string
}

// maxAttemptsTotal is ATT-3's cap on attempts per client request.
const maxAttemptsTotal = 4

// safeMethods are the methods that are retried, failed over or redirected
// (ATT-1).
var safeMethods = []string{"GET", "HEAD", "OPTIONS"}

// Config returns Caddy's JSON configuration for n.
func Config(n *topology.Neutral, o Options) ([]byte, error) {
	if o.Listen == "" {
		return nil, fmt.Errorf("caddy: no listen address")
	}
	g := &gen{n: n, o: o}
	var routes, errRoutes []any
	for _, hr := range genutil.OrderHostRules(n.HostRules) {
		pm, ok := genutil.PathMatcher(n, hr.PathMatcher)
		if !ok {
			return nil, fmt.Errorf("caddy: host rule %v: no path matcher %q", hr.Hosts, hr.PathMatcher)
		}
		sub, subErr, err := g.pathMatcher(pm)
		if err != nil {
			return nil, err
		}
		// MTH-3: a path no route matches gets 404 under this host rule.
		sub = append(sub, obj{"handle": []any{static(404, nil)}})
		r := obj{"handle": []any{obj{"handler": "subroute", "routes": sub}}, "terminal": true}
		e := obj{"handle": []any{obj{"handler": "subroute", "routes": subErr}}, "terminal": true}
		if m := hostMatchers(hr.Hosts); m != nil {
			r["match"], e["match"] = m, m
		}
		routes = append(routes, r)
		if len(subErr) > 0 {
			errRoutes = append(errRoutes, e)
		}
	}
	routes = append(routes, obj{"handle": []any{static(404, nil)}}) // MTH-3: unknown host
	server := obj{
		"listen":          []any{o.Listen},
		"automatic_https": obj{"disable": true},
		"routes":          routes,
	}
	if len(errRoutes) > 0 {
		server["errors"] = obj{"routes": errRoutes}
	}
	cfg := obj{
		"admin": obj{"disabled": true, "config": obj{"persist": false}},
		"apps":  obj{"http": obj{"servers": obj{"edgeconform": server}}},
	}
	if o.Storage != "" {
		cfg["storage"] = obj{"module": "file_system", "root": o.Storage}
	}
	logs := obj{"default": obj{"writer": obj{"output": "stderr"}, "encoder": obj{"format": "json"},
		"exclude": []any{"http.log.access.edgeconform"}}}
	if o.AccessLog != "" {
		server["logs"] = obj{"default_logger_name": "edgeconform"}
		logs["access"] = obj{"writer": obj{"output": "file", "filename": o.AccessLog}, "encoder": obj{"format": "json"},
			"include": []any{"http.log.access.edgeconform"}}
	}
	cfg["logging"] = obj{"logs": logs}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("caddy: encoding the configuration: %w", err)
	}
	return append(b, '\n'), nil
}

type gen struct {
	n *topology.Neutral
	o Options
}

func (g *gen) dialHost(addr string) string {
	if ip, ok := g.o.Resolve[addr]; ok {
		return ip
	}
	return addr
}

// hostMatchers match the hosts (Caddy ignores the port: MTH-5): exact
// ones with a host matcher, each wildcard as a regular expression on the
// host (Caddy's own wildcards stand for one label, Media CDN's for any
// number); nil for "*".
func hostMatchers(hosts []string) []any {
	var exact, sets []any
	for _, h := range hosts {
		switch {
		case h == "*":
			return nil
		case strings.Contains(h, "*"):
			re := "^" + strings.ReplaceAll(regexp.QuoteMeta(h), `\*`, ".+") + "$"
			// a CEL string literal: backslashes doubled
			sets = append(sets, obj{"expression": fmt.Sprintf("{http.request.host}.matches('%s')", strings.ReplaceAll(re, `\`, `\\`))})
		default:
			exact = append(exact, h)
		}
	}
	if len(exact) > 0 {
		sets = append([]any{obj{"host": exact}}, sets...)
	}
	return sets
}

func static(status int, headers obj) obj {
	s := obj{"handler": "static_response", "status_code": status}
	if headers != nil {
		s["headers"] = headers
	}
	return s
}

func (g *gen) pathMatcher(pm topology.NeutralPathMatcher) (routes, errRoutes []any, err error) {
	rs := genutil.ByPriority(pm.Routes) // MTH-4
	// MTH-2: a GET with a body gets 400.
	routes = append(routes, obj{
		"match": []any{
			obj{"method": []any{"GET"}, "header_regexp": obj{"Content-Length": obj{"pattern": "^0*[1-9]"}}},
			obj{"method": []any{"GET"}, "header": obj{"Transfer-Encoding": []any{"*"}}},
		},
		"handle":   []any{static(400, nil)},
		"terminal": true,
	})
	for _, r := range rs {
		match, err := matchSets(r.Match)
		if err != nil {
			return nil, nil, fmt.Errorf("caddy: route %s (priority %d): %w", r.Scenario, r.Priority, err)
		}
		attempts := g.attempts(r)
		if len(attempts) == 0 {
			return nil, nil, fmt.Errorf("caddy: route %s: origin %q not in the topology", r.Scenario, r.Origin)
		}
		var sub []any
		sub = append(sub, obj{"handle": []any{responseHeaders(r)}})
		sub = append(sub, obj{
			"match":    []any{obj{"not": []any{obj{"method": anys(r.Methods)}}}},
			"handle":   []any{static(405, obj{"Allow": []any{strings.Join(r.Methods, ", ")}})}, // MTH-1
			"terminal": true,
		})
		if h := requestHeaders(r); h != nil {
			sub = append(sub, obj{"handle": []any{h}})
		}
		if u := r.URLRewrite; u != nil && u.PathPrefix != "" && len(r.Match) > 0 && r.Match[0].Prefix != "" {
			// MTH-7: after matching.
			sub = append(sub, obj{"handle": []any{obj{"handler": "rewrite",
				"uri_substring": []any{obj{"find": r.Match[0].Prefix, "replace": u.PathPrefix, "limit": 1}}}}})
		}
		sub = append(sub, obj{"handle": []any{g.attempt(r, attempts, 0)}})
		routes = append(routes, obj{"match": match, "handle": []any{obj{"handler": "subroute", "routes": sub}}, "terminal": true})

		// CONNECT_FAILURE of the primary: fail over in the error routes
		// (Caddy answers a dial, TLS or header-timeout error with 502 or
		// 504).
		if next := failoverIndex(attempts); next > 0 {
			errMatch := make([]any, 0, len(match))
			for _, m := range match {
				mm := obj{}
				for k, v := range m.(obj) {
					mm[k] = v
				}
				mm["expression"] = "{http.error.status_code} == 502 || {http.error.status_code} == 504"
				errMatch = append(errMatch, mm)
			}
			errRoutes = append(errRoutes, obj{"match": errMatch, "handle": []any{obj{"handler": "subroute", "routes": []any{
				obj{"handle": []any{responseHeaders(r)}},
				obj{"match": []any{obj{"not": []any{obj{"method": anys(safeMethods)}}}}, "handle": []any{static(502, nil)}, "terminal": true},
				obj{"handle": []any{g.attempt(r, attempts, next)}},
			}}}, "terminal": true})
		}
	}
	return routes, errRoutes, nil
}

// failoverIndex is the index of the first attempt on another origin than
// the primary, when the primary retries connect failures; 0 for none.
func failoverIndex(attempts []topology.NeutralOrigin) int {
	if !slices.Contains(attempts[0].RetryConditions, "CONNECT_FAILURE") {
		return 0
	}
	for i, a := range attempts {
		if a.Name != attempts[0].Name {
			return i
		}
	}
	return 0
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// matchSets turns the route's match rules (OR-ed) into Caddy matcher sets.
func matchSets(ms []topology.NeutralMatch) ([]any, error) {
	var out []any
	for _, m := range ms {
		set := obj{}
		var pat string
		switch {
		case m.Prefix != "":
			pat = "^" + regexp.QuoteMeta(m.Prefix)
		case m.FullPath != "":
			pat = "^" + regexp.QuoteMeta(m.FullPath) + "$"
		case m.PathTemplate != "":
			return nil, fmt.Errorf("pathTemplateMatch %q is not supported by this generator", m.PathTemplate)
		}
		if pat != "" {
			if m.IgnoreCase {
				pat = "(?i)" + pat
			}
			// path_regexp, not path: Caddy's path matcher folds case (MTH-6).
			set["path_regexp"] = obj{"pattern": pat}
		}
		hdr, hdrNot := obj{}, []any{}
		for _, h := range m.Headers {
			var v string
			switch {
			case h.Exact != "":
				v = h.Exact
			case h.Prefix != "":
				v = h.Prefix + "*"
			case h.Suffix != "":
				v = "*" + h.Suffix
			case h.Present != nil:
				v = "*"
				if !*h.Present {
					hdrNot = append(hdrNot, obj{"header": obj{h.Name: []any{"*"}}})
					continue
				}
			}
			if h.Invert {
				hdrNot = append(hdrNot, obj{"header": obj{h.Name: []any{v}}})
				continue
			}
			hdr[h.Name] = []any{v}
		}
		if len(hdr) > 0 {
			set["header"] = hdr
		}
		if len(hdrNot) > 0 {
			set["not"] = hdrNot
		}
		q := obj{}
		for _, p := range m.Query {
			switch {
			case p.Exact != "":
				q[p.Name] = []any{p.Exact}
			case p.Present != nil && *p.Present:
				q[p.Name] = []any{"*"}
			}
		}
		if len(q) > 0 {
			set["query"] = q
		}
		out = append(out, set)
	}
	return out, nil
}

func headerOps(hs []topology.NeutralHeader, remove []string) obj {
	add, set := obj{}, obj{}
	for _, h := range hs {
		if h.Replace {
			set[h.Name] = []any{h.Value}
		} else {
			add[h.Name] = append(anyList(add[h.Name]), h.Value)
		}
	}
	ops := obj{}
	if len(add) > 0 {
		ops["add"] = add
	}
	if len(set) > 0 {
		ops["set"] = set
	}
	if len(remove) > 0 {
		ops["delete"] = anys(remove)
	}
	if len(ops) == 0 {
		return nil
	}
	return ops
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

func responseHeaders(r topology.NeutralRoute) obj {
	h := obj{"handler": "headers"}
	if ops := headerOps(r.ResponseHeadersToAdd, r.ResponseHeadersToRemove); ops != nil {
		h["response"] = ops
	}
	return h
}

func requestHeaders(r topology.NeutralRoute) obj {
	ops := headerOps(r.RequestHeadersToAdd, r.RequestHeadersToRemove)
	if ops == nil {
		return nil
	}
	return obj{"handler": "headers", "request": ops}
}

// attempts unrolls the route's attempt loop: the primary up to its
// maxAttempts, then each failover under its own, at most 4 in all (ATT-3).
func (g *gen) attempts(r topology.NeutralRoute) []topology.NeutralOrigin {
	var out []topology.NeutralOrigin
	for _, o := range g.n.Chain(r.Origin) {
		for i := 0; i < max(o.MaxAttempts, 1) && len(out) < maxAttemptsTotal; i++ {
			out = append(out, o)
		}
	}
	return out
}

// retryStatuses are the response statuses ATT-5 retries under conds, as
// Caddy status_code matcher values (5 is every 5xx).
func retryStatuses(conds []string) []any {
	var out []any
	for _, c := range conds {
		switch c {
		case "HTTP_5XX":
			out = append(out, 5)
		case "GATEWAY_ERROR":
			out = append(out, 502, 503, 504)
		case "RETRIABLE_4XX":
			out = append(out, 409, 429)
		case "NOT_FOUND":
			out = append(out, 404)
		case "FORBIDDEN":
			out = append(out, 403)
		}
	}
	return out
}

// host is the Host (and SNI) of an attempt on o: HST-1.
func host(r topology.NeutralRoute, o topology.NeutralOrigin) string {
	if o.HostRewrite != "" {
		return o.HostRewrite
	}
	if r.URLRewrite != nil && r.URLRewrite.Host != "" {
		return r.URLRewrite.Host
	}
	return ""
}

// attempt is the reverse_proxy handler of attempts[k], with the rest of
// the loop in its handle_response.
func (g *gen) attempt(r topology.NeutralRoute, attempts []topology.NeutralOrigin, k int) obj {
	o := attempts[k]
	same := 1
	for k+same < len(attempts) && attempts[k+same].Name == o.Name {
		same++
	}
	t := o.Timeouts
	transport := obj{"protocol": "http", "versions": []any{"1.1"}}
	if t.ConnectMs > 0 {
		transport["dial_timeout"] = fmt.Sprintf("%dms", t.ConnectMs)
		transport["response_header_timeout"] = fmt.Sprintf("%dms", t.ConnectMs)
	}
	if t.ReadMs > 0 {
		transport["read_timeout"] = fmt.Sprintf("%dms", t.ReadMs)
	}
	h := host(r, o)
	if o.Protocol == "HTTPS" || o.Protocol == "HTTP2" {
		sni := h
		if sni == "" {
			sni = "{http.request.host}"
		}
		tls := obj{"server_name": sni}
		if g.o.CAFile != "" {
			tls["root_ca_pem_files"] = []any{g.o.CAFile}
		}
		transport["tls"] = tls
		if o.Protocol == "HTTP2" {
			transport["versions"] = []any{"2"} // PRT-1: h2, no fallback
		}
	}
	rp := obj{
		"handler":   "reverse_proxy",
		"upstreams": []any{obj{"dial": net.JoinHostPort(g.dialHost(o.Address), strconv.Itoa(o.Port))}},
		"transport": transport,
	}
	if same > 1 && slices.Contains(o.RetryConditions, "CONNECT_FAILURE") {
		// Caddy retries only requests that failed to reach the upstream
		// (dial errors): the same origin again, immediately (ATT-11).
		rp["load_balancing"] = obj{"selection_policy": obj{"policy": "first"}, "retries": same - 1}
	}
	hdr := headerOps(o.RequestHeadersToAdd, nil)
	if h != "" {
		if hdr == nil {
			hdr = obj{}
		}
		set, _ := hdr["set"].(obj)
		if set == nil {
			set = obj{}
		}
		set["Host"] = []any{h}
		hdr["set"] = set
	}
	if hdr != nil {
		rp["headers"] = obj{"request": hdr}
	}
	if st := retryStatuses(o.RetryConditions); len(st) > 0 {
		next := static(502, nil) // ATT-7: every attempt retryable
		if k+1 < len(attempts) {
			next = g.attempt(r, attempts, k+1)
		}
		rp["handle_response"] = []any{obj{
			"match": obj{"status_code": st},
			"routes": []any{
				obj{"match": []any{obj{"not": []any{obj{"method": anys(safeMethods)}}}}, "handle": []any{static(502, nil)}, "terminal": true}, // ATT-2
				obj{"handle": []any{next}},
			},
		}}
	}
	return rp
}
