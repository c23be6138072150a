// Package reference is the reference edge cache: it behaves as Google Media
// CDN documents its origin behaviour, configured with Media CDN's own
// resources. The pieces are separate packages, each with one job:
//
//   - config: the resources, strict loading and validation, effective settings
//   - receive: what a client may send before the edge answers it itself
//     (request smuggling, head limits, Host validity, the h2 reset limit)
//   - pathtemplate, routing: host and route matching, rewrites, redirects at the edge
//   - upstream: one origin attempt over HTTP, HTTPS or HTTP2, with its Host and SNI
//   - fetch: the attempt loop (retries, failover, redirects, timeouts, 502/504)
//   - outcome: an attempt's typed outcome and the RFC 9209 proxy-status reasons
//   - secrets: the keys and tokens bucket origins are read with
//   - cache/policy, cache/store, cache/collapse: HTTP cache semantics,
//     storage, and request collapsing
//   - shield: the parent tier (SHD)
//   - edge: the client-facing handler: receive, route, the cache path
//     (lookup, revalidation, whole and 2 MiB chunked fills, ranges), deliver, log
//   - node: assembles one node (client, metrics, limits, edge) for the CLI,
//     the suites' target and the tests
//   - logsink: the asynchronous log writer
//   - soak: the fault-load soak (make soak)
//   - cmd/edgecache: the CLI; edgecontainer: a testcontainers-go module
package reference
