// Package reference is the reference edge cache: it behaves as Google Media
// CDN documents its origin behaviour, configured with Media CDN's own
// resources. The pieces are separate packages: config (resources,
// validation), pathtemplate, routing, upstream (one origin attempt), fetch
// (the attempt loop), edge (the client-facing handler) and cmd/edgecache
// (the CLI), with caching in cache/policy (HTTP cache semantics),
// cache/store (storage) and cache/collapse (request collapsing); edge uses
// them for whole objects up to 1 MiB. Ranges, large objects, revalidation
// and shielding are still to come.
package reference
