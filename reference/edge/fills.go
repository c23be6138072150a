package edge

import (
	"context"

	"github.com/edgeconform/edgeconform/reference/cache/collapse"
)

// Fills in flight (issue #12 item 2). COL-6 keeps a fill running after its
// leader's client leaves, for the followers; with nobody left it may
// finish at most one chunk's worth of body (ChunkSize: a small object or
// one chunk of a large one is completed and cached), then it stops and
// stores nothing. A chunked object's further chunks are filled only as a
// client reads them, so a client that goes away costs the origin at most
// one chunk per key. The fills in flight per node are bounded
// (WithMaxFills); a miss past the bound is answered 503 with Retry-After.

// newGroup is the node's collapse group with its limits.
func newGroup(maxFills int) *collapse.Group {
	if maxFills == 0 {
		maxFills = DefaultMaxFills
	}
	return collapse.New(context.Background(), collapse.MaxFills(maxFills), collapse.Unattended(ChunkSize))
}
