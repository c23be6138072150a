package edge

import "testing"

// The edge's cache outcomes map to Media CDN's {cdn_cache_status} values.
func TestCacheStatusVar(t *testing.T) {
	for outcome, want := range map[string]string{
		"hit": "hit", "revalidated": "revalidated_hit", "miss": "miss", "collapsed": "miss", "": "uncacheable", "bypass": "uncacheable",
	} {
		if got := cacheStatusVar(outcome); got != want {
			t.Errorf("cacheStatusVar(%q) = %q, want %q", outcome, got, want)
		}
	}
}
