package s3emu

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// CopyObject copies the bytes with the source's metadata (COPY) or the
// request's (REPLACE), honours the copy-source conditions, refuses a copy
// onto itself that changes nothing and allows one that replaces metadata.
func TestCopyObject(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		_, _, base := startS3(t, Config{DataDir: dir, Buckets: []BucketConfig{{Name: "src"}, {Name: "dst"}}})
		ctx := context.Background()
		c := sdkClient(base)
		data := randomBytes(300 << 10)
		put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("src"), Key: aws.String("a b/ü.bin"), Body: bytes.NewReader(data),
			ContentType: aws.String("video/mp4"), Metadata: map[string]string{"color": "red"}})
		if err != nil {
			t.Fatal(err)
		}
		src := aws.String("src/a%20b/%C3%BC.bin")
		out, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("copy"), CopySource: src})
		if err != nil {
			t.Fatalf("CopyObject: %v", err)
		}
		if aws.ToString(out.CopyObjectResult.ETag) != aws.ToString(put.ETag) {
			t.Errorf("copy ETag %s, want %s", aws.ToString(out.CopyObjectResult.ETag), aws.ToString(put.ETag))
		}
		if got := getBytes(t, c, "dst", "copy"); !bytes.Equal(got, data) {
			t.Fatalf("copy holds %d bytes", len(got))
		}
		head, _ := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("dst"), Key: aws.String("copy")})
		if aws.ToString(head.ContentType) != "video/mp4" || head.Metadata["color"] != "red" {
			t.Errorf("COPY directive: %v %v", aws.ToString(head.ContentType), head.Metadata)
		}
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("src"), Key: aws.String("a b/ü.bin"), CopySource: src})
		if apiCode(err) != "InvalidRequest" {
			t.Errorf("copy onto itself unchanged: %v, want InvalidRequest", err)
		}
		_, err = c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("src"), Key: aws.String("a b/ü.bin"), CopySource: src,
			MetadataDirective: types.MetadataDirectiveReplace, ContentType: aws.String("text/plain"), Metadata: map[string]string{"color": "blue"}})
		if err != nil {
			t.Fatalf("copy onto itself with REPLACE: %v", err)
		}
		head, _ = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("src"), Key: aws.String("a b/ü.bin")})
		if aws.ToString(head.ContentType) != "text/plain" || head.Metadata["color"] != "blue" {
			t.Errorf("REPLACE directive: %v %v", aws.ToString(head.ContentType), head.Metadata)
		}
		if got := getBytes(t, c, "src", "a b/ü.bin"); !bytes.Equal(got, data) {
			t.Fatalf("self-copy changed the bytes (%d)", len(got))
		}
		for name, in := range map[string]*s3.CopyObjectInput{
			"if-match":            {CopySourceIfMatch: aws.String(`"nope"`)},
			"if-none-match":       {CopySourceIfNoneMatch: put.ETag},
			"if-modified-since":   {CopySourceIfModifiedSince: aws.Time(time.Now().Add(time.Hour))},
			"if-unmodified-since": {CopySourceIfUnmodifiedSince: aws.Time(time.Now().Add(-time.Hour))},
		} {
			in.Bucket, in.Key, in.CopySource = aws.String("dst"), aws.String("cond"), src
			if _, err := c.CopyObject(ctx, in); apiCode(err) != "PreconditionFailed" {
				t.Errorf("copy-source %s: %v, want PreconditionFailed", name, err)
			}
		}
		if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("dst"), Key: aws.String("x"), CopySource: aws.String("src/missing")}); apiCode(err) != "NoSuchKey" {
			t.Errorf("missing source: %v", err)
		}
	}
	// The 412 of a conditional GET is S3's XML, never an empty body.
	_, _, base := startS3(t, Config{Buckets: []BucketConfig{{Name: "bkt", Objects: []ObjectConfig{{Key: "k", Body: "v"}}}}})
	req, _ := http.NewRequest(http.MethodGet, base+"/bkt/k", nil)
	req.Header.Set("If-Unmodified-Since", time.Now().Add(-48*time.Hour).UTC().Format(http.TimeFormat))
	signReq(t, req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 412 || !strings.Contains(buf.String(), "<Code>PreconditionFailed</Code>") {
		t.Errorf("If-Unmodified-Since: %d %q", resp.StatusCode, buf.String())
	}
}
