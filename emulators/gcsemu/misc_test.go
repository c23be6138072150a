package gcsemu

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// Each request's journal record says how it authenticated.
func TestJournalNotes(t *testing.T) {
	srv, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	base, e := serveEmu(t, srv)
	do(t, base, exchange{path: "/" + privBucket + "/secret.txt", token: goodToken})
	do(t, base, exchange{path: "/" + privBucket + "/secret.txt"})
	do(t, base, exchange{path: "/" + privBucket + "/secret.txt", token: "bad"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	reqs, err := e.Journal().WaitEnded(ctx, journal.Query{PathPrefix: "/" + privBucket}, 3)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, r := range reqs {
		notes = append(notes, r.Note)
	}
	if strings.Join(notes, "|") != "gcs: token ok|gcs: anonymous|gcs: bad token" {
		t.Fatalf("notes: %q", notes)
	}
}

func TestConfigErrors(t *testing.T) {
	_, err := New(Config{
		HostSuffix: "bad/suffix",
		Tokens:     []string{""},
		Buckets: []BucketConfig{
			{Name: "ok-bucket", Objects: []ObjectConfig{{Name: ""}, {Name: "a", Body: "x", Size: 3}, {Name: "b", Size: -1}, {Name: "c"}, {Name: "c"}}},
			{Name: "ok-bucket"},
			{Name: "BAD"},
		},
	})
	es, ok := fielderr.As(err)
	if !ok {
		t.Fatalf("not field errors: %v", err)
	}
	var fields []string
	for _, e := range es {
		fields = append(fields, e.Field)
	}
	want := "hostSuffix buckets[0].objects[0].name buckets[0].objects[1].size buckets[0].objects[2].size buckets[0].objects[4].name buckets[1].name buckets[2].name tokens[0]"
	if strings.Join(fields, " ") != want {
		t.Fatalf("fields:\n got %s\nwant %s\n(%v)", strings.Join(fields, " "), want, err)
	}
	// The config loads from JSON (and so YAML) with lowerCamelCase keys.
	var cfg Config
	raw := `{"hostSuffix":"s.example","anyHost":false,"tokens":["t"],"buckets":[{"name":"b-1","public":true,"objects":[{"name":"o","size":10,"contentType":"x/y","cacheControl":"no-cache"}]}]}`
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.anyHost() || cfg.Buckets[0].Objects[0].CacheControl != "no-cache" || !cfg.Buckets[0].Public {
		t.Fatalf("decoded %+v", cfg)
	}
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
}

// With Dir, written objects survive a restart; deleted ones do not.
func TestPersistence(t *testing.T) {
	cfg := testConfig()
	cfg.DataDir = t.TempDir()
	_, base := newTestServer(t, cfg)
	host := pubBucket + ".storage.googleapis.com"
	do(t, base, exchange{method: "PUT", path: "/keep/me", host: host, token: goodToken, body: "kept", headers: map[string]string{"Content-Type": "text/kept"}})
	do(t, base, exchange{method: "PUT", path: "/drop", host: host, token: goodToken, body: "dropped"})
	resp, _ := do(t, base, exchange{path: "/keep/me", host: host})
	gen := resp.Header.Get("X-Goog-Generation")
	do(t, base, exchange{method: "DELETE", path: "/drop", host: host, token: goodToken})

	_, base2 := newTestServer(t, cfg)
	resp, body := do(t, base2, exchange{path: "/keep/me", host: host})
	if resp.StatusCode != 200 || body != "kept" || resp.Header.Get("Content-Type") != "text/kept" || resp.Header.Get("X-Goog-Generation") != gen {
		t.Fatalf("after restart: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, _ := do(t, base2, exchange{path: "/drop", host: host}); resp.StatusCode != 404 {
		t.Fatalf("deleted object after restart: %d", resp.StatusCode)
	}
}

// The resumable protocol as a plain HTTP client sees it: 308 with Range,
// status queries, a retried overlapping chunk, cancel.
func TestResumableRaw(t *testing.T) {
	_, base := newTestServer(t, testConfig())
	resp, body := do(t, base, exchange{method: "POST", path: "/upload/storage/v1/b/" + pubBucket + "/o?uploadType=resumable", token: goodToken,
		body: `{"name":"raw/obj","contentType":"text/raw"}`, headers: map[string]string{"Content-Type": "application/json"}})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 200 || !strings.Contains(loc, "upload_id=") {
		t.Fatalf("start: %d %q %q", resp.StatusCode, body, loc)
	}
	path := strings.TrimPrefix(loc, base)
	chunk := func(rng, data string, want int, wantRange string) {
		t.Helper()
		resp, body := do(t, base, exchange{method: "PUT", path: path, body: data, headers: map[string]string{"Content-Range": rng}})
		if resp.StatusCode != want || resp.Header.Get("Range") != wantRange {
			t.Fatalf("%s: %d Range %q %q", rng, resp.StatusCode, resp.Header.Get("Range"), body)
		}
	}
	chunk("bytes */*", "", 308, "")
	chunk("bytes 0-3/*", "abcd", 308, "bytes=0-3")
	chunk("bytes 2-5/*", "cdef", 308, "bytes=0-5") // retried overlap
	chunk("bytes 9-9/*", "x", 400, "")             // gap
	chunk("bytes */*", "", 308, "bytes=0-5")
	chunk("bytes 6-7/8", "gh", 200, "")
	resp, body = do(t, base, exchange{path: "/" + pubBucket + "/raw/obj"})
	if body != "abcdefgh" || resp.Header.Get("Content-Type") != "text/raw" {
		t.Fatalf("uploaded: %q %v", body, resp.Header)
	}
	chunk("bytes */8", "", 404, "") // session gone
	// Cancel.
	resp, _ = do(t, base, exchange{method: "POST", path: "/upload/storage/v1/b/" + pubBucket + "/o?uploadType=resumable&name=c", token: goodToken})
	path = strings.TrimPrefix(resp.Header.Get("Location"), base)
	if resp, _ := do(t, base, exchange{method: "DELETE", path: path}); resp.StatusCode != 499 {
		t.Fatalf("cancel: %d", resp.StatusCode)
	}
	// Media upload and JSON metadata, with a name needing escapes.
	resp, body = do(t, base, exchange{method: "POST", path: "/upload/storage/v1/b/" + pubBucket + "/o?uploadType=media&name=m%2Fa%20b", token: goodToken, body: "media", headers: map[string]string{"Content-Type": "text/m"}})
	if resp.StatusCode != 200 {
		t.Fatalf("media: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, base, exchange{path: "/storage/v1/b/" + pubBucket + "/o/m%2Fa%20b"})
	var meta map[string]any
	if err := json.Unmarshal([]byte(body), &meta); err != nil || meta["name"] != "m/a b" || meta["size"] != "5" || meta["contentType"] != "text/m" ||
		meta["md5Hash"] == "" || meta["crc32c"] == "" || meta["kind"] != "storage#object" || meta["cacheControl"] != "public, max-age=3600" {
		t.Fatalf("metadata: %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, base, exchange{path: "/download/storage/v1/b/" + pubBucket + "/o/m%2Fa%20b?alt=media"}); body != "media" || resp.Header.Get("X-Goog-Hash") != wantHash([]byte("media")) {
		t.Fatalf("download: %q", body)
	}
	// JSON API errors are JSON.
	resp, body = do(t, base, exchange{path: "/storage/v1/b/" + pubBucket + "/o/nope"})
	if resp.StatusCode != 404 || !strings.Contains(body, `"code":404`) {
		t.Fatalf("JSON 404: %d %s", resp.StatusCode, body)
	}
}
