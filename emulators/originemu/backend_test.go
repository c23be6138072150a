package originemu

import (
	"io"
	"net/http"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
)

// A listener's backend answers instead of the object store; rules still
// shape its answer, and its journal notes land on the request's record.
func TestBackend(t *testing.T) {
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		journal.Annotate(r.Context(), "backend saw "+r.URL.Path)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Etag", `"b"`)
		io.WriteString(w, "from the backend")
	})
	e := startEmu(t, Config{Listeners: []ListenerConfig{{Name: "bucket", Profile: HTTP, Backend: backend}}})
	c := clientFor(t, e, "bucket", "")
	resp, body, err := get(t, c, e.URL("bucket")+"/b/key")
	if err != nil || string(body) != "from the backend" || resp.Header.Get("Etag") != `"b"` {
		t.Fatalf("GET: %v %q %v", resp, body, err)
	}
	if _, err := http.ParseTime(resp.Header.Get("Date")); err != nil {
		t.Fatalf("backend answer without a valid Date (%q): a server always sends one", resp.Header.Get("Date"))
	}
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/b/key"}, Action: rules.Action{Omit: []string{"ETag"}, Truncate: &rules.Cut{AfterBytes: ptr[int64](4)}}})
	resp, err = c.Get(e.URL("bucket") + "/b/key")
	if err != nil {
		t.Fatal(err)
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || string(body) != "from" || resp.Header.Get("Etag") != "" {
		t.Fatalf("shaped backend answer: %q %v %v", body, err, resp.Header)
	}
	reqs := waitEnded(t, e, journal.Query{PathPrefix: "/b/key"}, 2)
	if reqs[0].Note != "backend saw /b/key" || reqs[1].End != journal.EndTruncated {
		t.Fatalf("journal: %+v", reqs)
	}
}
