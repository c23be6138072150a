// Package reference is the reference edge cache: it behaves as Google Media
// CDN documents its origin behaviour, configured with Media CDN's own
// resources. The pieces are separate packages: config (resources,
// validation), pathtemplate, routing, upstream (one origin attempt), fetch
// (the attempt loop), edge (the client-facing handler) and cmd/edgecache
// (the CLI). The caching pieces, cache/policy (HTTP cache semantics),
// cache/store (storage) and cache/collapse (request collapsing), exist and
// are tested but are not yet wired into edge; ranges and shielding are
// still to come.
package reference
