package edge

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/objects"
)

// RFC 9111 5.3 and 5.1 end to end under USE_ORIGIN_HEADERS (CCH-3): an
// Expires that is not a strict HTTP-date, and an Age that is not one
// non-negative integer, leave the stored response stale, so the second GET
// goes to the origin again instead of being a hit.
func TestInvalidExpiresAndAgeAreStale(t *testing.T) {
	r := newRig(t, cacheConfig)
	future := time.Now().Add(24 * time.Hour).UTC()
	cases := []struct {
		name string
		spec objects.Spec
	}{
		// Lenient parsers (time.Parse) read this as tomorrow.
		{"RFC 9111 5.3 Expires with extra spaces", objects.Spec{Path: "/o/expires-spaces",
			Headers: map[string]string{"Expires": future.Format("Mon,  02 Jan 2006 15:04:05 GMT")}}},
		{"RFC 9111 5.1 Age list", objects.Spec{Path: "/o/age-list", CacheControl: "max-age=600",
			Headers: map[string]string{"Age": "old, 0"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.put(c.spec)
			path := c.spec.Path
			resp, _ := r.get(path)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Status") != "edgecache; fwd=miss" {
				t.Fatalf("first GET: %d Cache-Status %q", resp.StatusCode, resp.Header.Get("Cache-Status"))
			}
			r.waitLogged(path, 1)
			resp, _ = r.get(path)
			if cs := resp.Header.Get("Cache-Status"); resp.StatusCode != http.StatusOK || strings.Contains(cs, "hit") {
				t.Fatalf("second GET: %d Cache-Status %q, want a stale entry sent to the origin", resp.StatusCode, cs)
			}
			r.originCount(path, 2)
		})
	}
}
