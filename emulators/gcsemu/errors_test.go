package gcsemu

import (
	"strings"
	"testing"
	"time"
)

// 412 and 416 are Cloud Storage's XML (XML API) or JSON (JSON API) errors,
// never empty or plain-text bodies.
func TestErrorBodies(t *testing.T) {
	_, url := newTestServer(t, testConfig())
	old := time.Now().Add(-72 * time.Hour).UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT")
	for _, c := range []struct {
		name, path string
		hdr        map[string]string
		status     int
		want       string
	}{
		{"xml if-match", "/" + privBucket + "/secret.txt", map[string]string{"If-Match": `"nope"`}, 412, "<Code>PreconditionFailed</Code>"},
		{"xml if-unmodified-since", "/" + privBucket + "/secret.txt", map[string]string{"If-Unmodified-Since": old}, 412, "<Code>PreconditionFailed</Code>"},
		{"xml range", "/" + privBucket + "/secret.txt", map[string]string{"Range": "bytes=100-200"}, 416, "<Code>InvalidRange</Code>"},
		{"json range", "/storage/v1/b/" + privBucket + "/o/secret.txt?alt=media", map[string]string{"Range": "bytes=100-"}, 416, `"reason":"requestedRangeNotSatisfiable"`},
		{"json if-match", "/download/storage/v1/b/" + privBucket + "/o/secret.txt?alt=media", map[string]string{"If-Match": `"x"`}, 412, `"reason":"conditionNotMet"`},
	} {
		resp, body := doReq(t, "GET", url+c.path, "", c.hdr)
		if resp.StatusCode != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %q, want %d with %s", c.name, resp.StatusCode, body, c.status, c.want)
		}
	}
	if resp, body := doReq(t, "GET", url+"/"+privBucket+"/secret.txt", "", map[string]string{"Range": "bytes=2-4"}); resp.StatusCode != 206 || body != "p s" {
		t.Errorf("a satisfiable range: %d %q", resp.StatusCode, body)
	}
}
