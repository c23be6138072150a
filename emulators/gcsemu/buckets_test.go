package gcsemu

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/api/iterator"
)

// Buckets are created, listed, read and deleted through the Go client
// (JSON API) and the XML API; a non-empty bucket is not deleted; bucket
// management needs a token when tokens are configured.
func TestBuckets(t *testing.T) {
	_, url := newTestServer(t, testConfig())
	ctx := context.Background()
	c := newClient(t, url, goodToken)
	if err := c.Bucket("made-by-client").Create(ctx, "test-project", nil); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := c.Bucket("made-by-client").Create(ctx, "test-project", nil); !isStatus(err, http.StatusConflict) {
		t.Errorf("Create twice: %v, want 409", err)
	}
	var names []string
	it := c.Buckets(ctx, "test-project")
	for {
		a, err := it.Next()
		if err == iterator.Done {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, a.Name)
	}
	if strings.Join(names, ",") != "made-by-client,"+privBucket+","+pubBucket {
		t.Errorf("buckets %v", names)
	}
	writeObject(t, c.Bucket("made-by-client").Object("x"), []byte("x"), 0, "text/plain")
	if err := c.Bucket("made-by-client").Delete(ctx); !isStatus(err, http.StatusConflict) {
		t.Errorf("deleting a non-empty bucket: %v", err)
	}
	c.Bucket("made-by-client").Object("x").Delete(ctx)
	if err := c.Bucket("made-by-client").Delete(ctx); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := c.Bucket("made-by-client").Attrs(ctx); !isStatus(err, http.StatusNotFound) {
		t.Errorf("Attrs after delete: %v", err)
	}
	// The XML API.
	if resp, body := doReq(t, "PUT", url+"/xml-bucket", "", nil); resp.StatusCode != 200 {
		t.Fatalf("XML PUT bucket: %d %s", resp.StatusCode, body)
	}
	if resp, body := doReq(t, "GET", url+"/", "", nil); resp.StatusCode != 200 || !strings.Contains(body, "<Name>xml-bucket</Name>") {
		t.Errorf("XML GET /: %d %s", resp.StatusCode, body)
	}
	if resp, body := doReq(t, "GET", url+"/xml-bucket", "", nil); resp.StatusCode != 200 || !strings.Contains(body, "<ListBucketResult") {
		t.Errorf("XML GET bucket: %d %s", resp.StatusCode, body)
	}
	if resp, _ := doReq(t, "DELETE", url+"/xml-bucket", "", nil); resp.StatusCode != 204 {
		t.Errorf("XML DELETE bucket: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("PUT", url+"/anon-bucket", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous bucket create with tokens configured: %d", resp.StatusCode)
	}
}

// With tokens configured, anonymous callers write only to buckets
// configured with anonymousWrite.
func TestAnonymousWrite(t *testing.T) {
	cfg := testConfig()
	cfg.Buckets = append(cfg.Buckets, BucketConfig{Name: "drop-box", Public: true, AnonymousWrite: true})
	_, url := newTestServer(t, cfg)
	anon := newClient(t, url, "")
	writeObject(t, anon.Bucket("drop-box").Object("a.txt"), []byte("anon"), 0, "text/plain")
	w := anon.Bucket(pubBucket).Object("a.txt").NewWriter(context.Background())
	w.Write([]byte("no"))
	if err := w.Close(); !isStatus(err, http.StatusForbidden) {
		t.Errorf("anonymous write to a public bucket without anonymousWrite: %v", err)
	}
}

// With a data directory, a bucket created through the API and its objects
// are there again after a restart; a deleted one is not.
func TestBucketsPersist(t *testing.T) {
	cfg := testConfig()
	cfg.DataDir = t.TempDir()
	_, url := newTestServer(t, cfg)
	ctx := context.Background()
	c := newClient(t, url, goodToken)
	for _, name := range []string{"kept-bucket", "gone-bucket"} {
		if err := c.Bucket(name).Create(ctx, "p", nil); err != nil {
			t.Fatal(err)
		}
	}
	writeObject(t, c.Bucket("kept-bucket").Object("o"), []byte("persisted"), 0, "text/plain")
	if err := c.Bucket("gone-bucket").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	_, url2 := newTestServer(t, cfg)
	c2 := newClient(t, url2, goodToken)
	if got := readAll(t)(c2.Bucket("kept-bucket").Object("o").NewReader(ctx)); string(got) != "persisted" {
		t.Fatalf("after a restart: %q", got)
	}
	if _, err := c2.Bucket("gone-bucket").Attrs(ctx); !isStatus(err, http.StatusNotFound) {
		t.Errorf("deleted bucket after a restart: %v", err)
	}
}
