package gcsemu

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
)

// Custom metadata and the other writable fields are stored and returned on
// both APIs; Update (PATCH) changes them with the next metageneration;
// Copier (rewrite) and CopyTo copy bytes and metadata; Composer
// concatenates up to 32 components.
func TestMetadataCopyCompose(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		cfg := testConfig()
		cfg.DataDir = dir
		_, url := newTestServer(t, cfg)
		ctx := context.Background()
		c := newClient(t, url, goodToken)
		bkt := c.Bucket(privBucket)
		w := bkt.Object("a.txt").NewWriter(ctx)
		w.ContentType, w.ContentDisposition, w.Metadata = "text/plain", "inline", map[string]string{"color": "red", "mtime": "2020"}
		w.Write([]byte("first-"))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		a, err := bkt.Object("a.txt").Attrs(ctx)
		if err != nil || a.Metadata["color"] != "red" || a.ContentDisposition != "inline" {
			t.Fatalf("Attrs: %+v %v", a, err)
		}
		resp, body := doReq(t, "GET", url+"/"+privBucket+"/a.txt", "", nil)
		if resp.Header.Get("X-Goog-Meta-Color") != "red" || resp.Header.Get("Content-Disposition") != "inline" || body != "first-" {
			t.Errorf("XML GET: %v %q", resp.Header, body)
		}
		u, err := bkt.Object("a.txt").Update(ctx, storage.ObjectAttrsToUpdate{Metadata: map[string]string{"color": "blue"}, CacheControl: "no-store"})
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
		if u.Metadata["color"] != "blue" || u.CacheControl != "no-store" || u.Metageneration != a.Metageneration+1 || u.Generation != a.Generation {
			t.Errorf("after Update: %+v", u)
		}
		if _, err := bkt.Object("a.txt").If(storage.Conditions{MetagenerationMatch: a.Metageneration}).Update(ctx, storage.ObjectAttrsToUpdate{ContentType: "x/y"}); !isStatus(err, http.StatusPreconditionFailed) {
			t.Errorf("Update on a stale metageneration: %v", err)
		}
		// An XML PUT with x-goog-meta-*.
		if resp, body := doReq(t, "PUT", url+"/"+privBucket+"/b.txt", "second", map[string]string{"X-Goog-Meta-Kind": "xml"}); resp.StatusCode != 200 {
			t.Fatalf("XML PUT: %d %s", resp.StatusCode, body)
		}
		if b, _ := bkt.Object("b.txt").Attrs(ctx); b == nil || b.Metadata["kind"] != "xml" {
			t.Errorf("x-goog-meta-kind not stored: %+v", b)
		}
		cp, err := bkt.Object("copy.txt").CopierFrom(bkt.Object("a.txt")).Run(ctx)
		if err != nil || cp.Metadata["color"] != "blue" || cp.Size != 6 {
			t.Fatalf("Copier: %+v %v", cp, err)
		}
		comp := bkt.Object("ab.txt").ComposerFrom(bkt.Object("a.txt"), bkt.Object("b.txt"), bkt.Object("copy.txt"))
		comp.ContentType = "text/x-composed"
		ca, err := comp.Run(ctx)
		if err != nil {
			t.Fatalf("Composer: %v", err)
		}
		got := readAll(t)(bkt.Object("ab.txt").NewReader(ctx))
		if string(got) != "first-secondfirst-" || ca.ContentType != "text/x-composed" {
			t.Errorf("composed %q, %s", got, ca.ContentType)
		}
		var many []*storage.ObjectHandle
		for range 33 {
			many = append(many, bkt.Object("a.txt"))
		}
		if _, err := bkt.Object("too-many").ComposerFrom(many...).Run(ctx); !isStatus(err, http.StatusBadRequest) || !strings.Contains(err.Error(), "exceeds the maximum (32)") {
			t.Errorf("33 components: %v", err)
		}
	}
}

func isStatus(err error, code int) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == code
}
