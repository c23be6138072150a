package s3emu

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	neturl "net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// minio-go v7 works against the emulator end to end (its PutObject uses
// signed aws-chunked streaming over plain HTTP).
func TestMinioClient(t *testing.T) {
	_, e, url := startS3(t, Config{})
	u, _ := neturl.Parse(url)
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(testAKID, testSecret, ""), Secure: false, Region: testRegion})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const bkt = "minio-bucket"
	if err := c.MakeBucket(ctx, bkt, minio.MakeBucketOptions{Region: testRegion}); err != nil {
		t.Fatalf("MakeBucket: %v", err)
	}
	if ok, err := c.BucketExists(ctx, bkt); !ok || err != nil {
		t.Fatalf("BucketExists: %v %v", ok, err)
	}
	big := make([]byte, 3<<20+17)
	rand.Read(big)
	objs := map[string][]byte{"a/one": []byte("first object"), "a/two words": big, "b": []byte("bee")}
	for k, v := range objs {
		info, err := c.PutObject(ctx, bkt, k, bytes.NewReader(v), int64(len(v)), minio.PutObjectOptions{ContentType: "text/x-minio"})
		if err != nil {
			t.Fatalf("PutObject %q: %v", k, err)
		}
		if `"`+info.ETag+`"` != md5ETag(v) {
			t.Errorf("PutObject %q ETag %s", k, info.ETag)
		}
	}
	for k, v := range objs {
		o, err := c.GetObject(ctx, bkt, k, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(o)
		o.Close()
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("GetObject %q: %d bytes %v", k, len(got), err)
		}
	}
	opts := minio.GetObjectOptions{}
	opts.SetRange(1000, 1999)
	o, err := c.GetObject(ctx, bkt, "a/two words", opts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(o)
	o.Close()
	if err != nil || !bytes.Equal(got, big[1000:2000]) {
		t.Fatalf("ranged GetObject: %d bytes %v", len(got), err)
	}
	st, err := c.StatObject(ctx, bkt, "a/two words", minio.StatObjectOptions{})
	if err != nil || st.Size != int64(len(big)) || st.ContentType != "text/x-minio" {
		t.Fatalf("StatObject: %v %+v", err, st)
	}
	var keys []string
	for oi := range c.ListObjects(ctx, bkt, minio.ListObjectsOptions{Recursive: true}) {
		if oi.Err != nil {
			t.Fatal(oi.Err)
		}
		keys = append(keys, oi.Key)
	}
	sort.Strings(keys)
	if strings.Join(keys, ",") != "a/one,a/two words,b" {
		t.Fatalf("ListObjects: %q", keys)
	}
	keys = nil
	for oi := range c.ListObjects(ctx, bkt, minio.ListObjectsOptions{Prefix: "a/"}) {
		keys = append(keys, oi.Key)
	}
	if strings.Join(keys, ",") != "a/one,a/two words" {
		t.Fatalf("ListObjects a/: %q", keys)
	}
	pu, err := c.PresignedGetObject(ctx, bkt, "a/two words", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(pu.String())
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, big) {
		t.Fatalf("presigned GET: %d, %d bytes", resp.StatusCode, len(got))
	}
	if err := c.RemoveObject(ctx, bkt, "b", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StatObject(ctx, bkt, "b", minio.StatObjectOptions{}); minio.ToErrorResponse(err).Code != "NoSuchKey" {
		t.Fatalf("StatObject after remove: %v", err)
	}
	ns := notes(t, e, 1)
	if bad := len(ns) - countNotes(ns, "sigv4: ok ("+testAKID); bad != 0 {
		t.Errorf("%d requests not verified: %q", bad, ns)
	}
	// minio-go's uploads over HTTP are signed aws-chunked streams.
	reqs := e.Journal().Query(journalPuts()).Requests
	streamed := 0
	for _, r := range reqs {
		for _, f := range r.Headers {
			if strings.EqualFold(f.Name, "X-Amz-Content-Sha256") && strings.HasPrefix(f.Value, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD") {
				streamed++
			}
		}
	}
	if streamed != len(objs) {
		t.Errorf("%d of %d uploads were signed streams", streamed, len(objs))
	}
}
