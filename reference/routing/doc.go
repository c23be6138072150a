// Package routing is the reference edge cache's router: it maps a client
// request to one of an EdgeCacheService's route rules, the way Media CDN
// documents routing (rules MTH-1 to MTH-7 of ../shared/spec/behaviour.md).
//
// A Router is compiled once, by New, from a validated config.Service: host
// rules become an exact/wildcard table, route rules are sorted by priority,
// path templates become regular expressions and rewrites are parsed. New
// does not trust its input blindly: anything it cannot compile is an error
// naming the field (routing.pathMatchers[0].routeRules[2]...), never a panic.
// A Router is immutable and safe for concurrent use.
//
// Route answers one request:
//
//   - 400 for a GET or HEAD with a body, or a request that declares
//     trailers (MTH-2);
//   - 404 for an unknown host or a path no route matches (MTH-3);
//   - 405, with the route's Allow list, when the first matching route does
//     not allow the method (MTH-1);
//   - otherwise a Result: the route, its captures, the normalised path that
//     was matched (the cache key's path, MTH-6/MTH-7) and either the origin
//     with the rewritten origin path, or a redirect answered at the edge.
//
// Interpretations (INT) this package makes where the documentation is
// silent; each is repeated where it is implemented:
//
//   - Methods: a route with routeMethods allows exactly the listed methods,
//     plus HEAD when GET is listed. An empty allowedMethods list means the
//     default (GET, HEAD, OPTIONS). Methods are case-sensitive (RFC 9110).
//   - MTH-2 applies to HEAD as well as GET; the 400 checks run before host
//     and route matching, so a GET with a body to an unknown host is a 400.
//     Undeclared trailers on a body that is not read here are the server's
//     to catch.
//   - Hosts follow the API reference's order: exact, then suffix wildcards
//     (*.example.com, *-bar.example.com), then prefix wildcards (foo.*),
//     then "*"; within a class the longest pattern wins. A wildcard matches
//     one or more of [a-z0-9-.]; "*" alone matches any host, even an empty
//     one. The port and one trailing dot of the request's Host are ignored;
//     comparison is case-insensitive.
//   - Normalisation works on the escaped path (%2F and %2e stay as sent);
//     a trailing slash is kept, and "." or ".." as the last segment leaves
//     one. A path that does not start with "/" (OPTIONS *) gets one.
//   - Path templates follow Google's URI-template grammar (as in Envoy's
//     uri_template): "*" is one non-empty segment, "**" any run of
//     characters including "/" (so /a/** matches /a/ and /a/b/c, not /a),
//     {x} and {x=*} capture one segment, {x=**} the rest; a variable may
//     hold several segments ({x=videos/*}); the last segment may carry a
//     literal suffix (/**.m3u8, /*/{seg}.m4s); nothing but literals may
//     follow "**".
//   - Header matches compare the values as sent, any value matching; the
//     Host header is the request's Host. invertMatch negates the whole
//     criterion, so an absent header satisfies an inverted exactMatch. A
//     header or query match with no criterion set is exactMatch "" (JSON
//     cannot tell the two apart).
//   - pathPrefixRewrite and prefixRedirect replace the matched prefixMatch
//     prefix; for a fullPathMatch or pathTemplateMatch they replace the
//     whole path. The rewritten path is not normalised again. The origin
//     path is built from the normalised path; the raw query is kept as is.
//   - A redirect keeps the request's Host as sent (port included), except
//     that an httpsRedirect that changes the scheme drops the port.
//   - A header action's replace=true deletes the values present before the
//     action; every add of the action is then appended, so two adds of one
//     name both survive. Header values are literal (no {variables}).
package routing
