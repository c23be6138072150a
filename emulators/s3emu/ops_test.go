package s3emu

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// DeleteObjects deletes every key, listing them (verbose) or only the
// errors (quiet).
func TestDeleteObjects(t *testing.T) {
	_, _, base := startS3(t, Config{Buckets: []BucketConfig{{Name: "del", Objects: []ObjectConfig{{Key: "a", Body: "1"}, {Key: "b", Body: "2"}, {Key: "c", Body: "3"}}}}})
	ctx := context.Background()
	c := sdkClient(base)
	out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("del"), Delete: &types.Delete{Objects: []types.ObjectIdentifier{{Key: aws.String("a")}, {Key: aws.String("missing")}}}})
	if err != nil {
		t.Fatalf("DeleteObjects: %v", err)
	}
	if len(out.Deleted) != 2 || len(out.Errors) != 0 {
		t.Errorf("verbose: deleted %d, errors %d", len(out.Deleted), len(out.Errors))
	}
	out, err = c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("del"), Delete: &types.Delete{Quiet: aws.Bool(true), Objects: []types.ObjectIdentifier{{Key: aws.String("b")}, {Key: aws.String("c"), VersionId: aws.String("v2")}}}})
	if err != nil {
		t.Fatalf("quiet DeleteObjects: %v", err)
	}
	if len(out.Deleted) != 0 || len(out.Errors) != 1 || aws.ToString(out.Errors[0].Code) != "NotImplemented" {
		t.Errorf("quiet: deleted %v, errors %+v", out.Deleted, out.Errors)
	}
	l, _ := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("del")})
	if len(l.Contents) != 1 || aws.ToString(l.Contents[0].Key) != "c" {
		t.Errorf("left: %+v", l.Contents)
	}
}

// response-content-* overrides apply on signed and presigned GETs.
func TestResponseOverrides(t *testing.T) {
	_, _, base := startS3(t, Config{Buckets: []BucketConfig{{Name: "ovr", Objects: []ObjectConfig{{Key: "k", Body: "body", ContentType: "text/plain"}}}}})
	ctx := context.Background()
	c := sdkClient(base)
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("ovr"), Key: aws.String("k"), ResponseContentType: aws.String("video/mp4"),
		ResponseContentDisposition: aws.String(`attachment; filename="x.mp4"`), ResponseCacheControl: aws.String("max-age=5")})
	if err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	if aws.ToString(out.ContentType) != "video/mp4" || aws.ToString(out.ContentDisposition) != `attachment; filename="x.mp4"` || aws.ToString(out.CacheControl) != "max-age=5" {
		t.Errorf("overrides: %v %v %v", aws.ToString(out.ContentType), aws.ToString(out.ContentDisposition), aws.ToString(out.CacheControl))
	}
	ps, err := s3.NewPresignClient(c).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("ovr"), Key: aws.String("k"), ResponseContentType: aws.String("application/x-presigned")})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(ps.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-presigned" {
		t.Errorf("presigned override: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// What the emulator does not implement is 501 NotImplemented naming it:
// never a bucket listing or the object, never a misleading AccessDenied.
func TestNotImplemented(t *testing.T) {
	_, _, base := startS3(t, Config{Buckets: []BucketConfig{{Name: "nimp", Objects: []ObjectConfig{{Key: "k", Body: "v"}}}}})
	ctx := context.Background()
	c := sdkClient(base)
	_, err := c.GetBucketEncryption(ctx, &s3.GetBucketEncryptionInput{Bucket: aws.String("nimp")})
	if apiCode(err) != "NotImplemented" || !strings.Contains(err.Error(), "?encryption") {
		t.Errorf("GetBucketEncryption: %v", err)
	}
	_, err = c.GetObjectAttributes(ctx, &s3.GetObjectAttributesInput{Bucket: aws.String("nimp"), Key: aws.String("k"), ObjectAttributes: []types.ObjectAttributes{types.ObjectAttributesEtag}})
	if apiCode(err) != "NotImplemented" || !strings.Contains(err.Error(), "?attributes") {
		t.Errorf("GetObjectAttributes: %v", err)
	}
	_, err = c.PutObjectTagging(ctx, &s3.PutObjectTaggingInput{Bucket: aws.String("nimp"), Key: aws.String("k"), Tagging: &types.Tagging{TagSet: []types.Tag{{Key: aws.String("a"), Value: aws.String("b")}}}})
	if apiCode(err) != "NotImplemented" {
		t.Errorf("PutObjectTagging: %v", err)
	}
	// A browser POST-policy upload (anonymous, multipart/form-data).
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("key", "up.txt")
	mw.WriteField("policy", "e30=")
	fw, _ := mw.CreateFormFile("file", "up.txt")
	fw.Write([]byte("hello"))
	mw.Close()
	resp, err := http.Post(base+"/nimp", mw.FormDataContentType(), &form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 501 || !strings.Contains(string(body), "<Code>NotImplemented</Code>") || !strings.Contains(string(body), "POST policy") {
		t.Errorf("POST policy upload: %d %s", resp.StatusCode, body)
	}
}

// Write headers asking for what is not implemented are 501 naming them,
// never silently ignored.
func TestNotImplementedHeaders(t *testing.T) {
	_, _, base := startS3(t, Config{Buckets: []BucketConfig{{Name: "nimp"}}})
	ctx := context.Background()
	c := sdkClient(base)
	for name, in := range map[string]*s3.PutObjectInput{
		"x-amz-tagging":                     {Tagging: aws.String("a=b")},
		"x-amz-object-lock-mode":            {ObjectLockMode: types.ObjectLockModeGovernance},
		"x-amz-website-redirect-location":   {WebsiteRedirectLocation: aws.String("/x")},
		"x-amz-server-side-encryption: aws": {ServerSideEncryption: types.ServerSideEncryptionAwsKms},
	} {
		in.Bucket, in.Key, in.Body = aws.String("nimp"), aws.String("k"), strings.NewReader("v")
		_, err := c.PutObject(ctx, in)
		if apiCode(err) != "NotImplemented" || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
