package s3emu

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

func sdkClient(url string) *s3.Client {
	return s3.New(s3.Options{
		Region:       testRegion,
		BaseEndpoint: aws.String(url),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(testAKID, testSecret, ""),
	})
}

// The AWS SDK for Go v2 works against the emulator end to end, and every
// request it signs is journaled as verified.
func TestAWSSDK(t *testing.T) {
	_, e, url := startS3(t, Config{})
	ctx := context.Background()
	c := sdkClient(url)
	const bkt = "sdk-bucket"
	if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bkt),
		CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(testRegion)}}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bkt)}); err != nil {
		t.Fatalf("HeadBucket: %v", err)
	}
	big := make([]byte, 5<<20+123)
	rand.Read(big)
	objs := map[string][]byte{
		"small.txt":         []byte("hello, bucket"),
		"dir/a b+c~(1).bin": big,
		"dir/sub/x":         []byte("x"),
		"dir/sub/y":         []byte("y"),
		"empty":             {},
		"ünï/cödé":          []byte("unicode"),
	}
	for k, v := range objs {
		out, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bkt), Key: aws.String(k), Body: bytes.NewReader(v), ContentType: aws.String("application/x-test")})
		if err != nil {
			t.Fatalf("PutObject %q: %v", k, err)
		}
		if *out.ETag != md5ETag(v) {
			t.Errorf("PutObject %q ETag %s, want %s", k, *out.ETag, md5ETag(v))
		}
	}
	for k, v := range objs {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bkt), Key: aws.String(k)})
		if err != nil {
			t.Fatalf("GetObject %q: %v", k, err)
		}
		got, err := io.ReadAll(out.Body)
		out.Body.Close()
		if err != nil || !bytes.Equal(got, v) || *out.ContentType != "application/x-test" {
			t.Fatalf("GetObject %q: %d bytes, %v, %s", k, len(got), err, *out.ContentType)
		}
	}
	rng, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bkt), Key: aws.String("dir/a b+c~(1).bin"), Range: aws.String("bytes=4194300-4194309")})
	if err != nil {
		t.Fatalf("ranged GetObject: %v", err)
	}
	got, _ := io.ReadAll(rng.Body)
	rng.Body.Close()
	if !bytes.Equal(got, big[4194300:4194310]) || *rng.ContentRange != fmt.Sprintf("bytes 4194300-4194309/%d", len(big)) {
		t.Fatalf("range: %x %s", got, *rng.ContentRange)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bkt), Key: aws.String("dir/a b+c~(1).bin")})
	if err != nil || *head.ContentLength != int64(len(big)) || *head.ETag != md5ETag(big) {
		t.Fatalf("HeadObject: %v %+v", err, head)
	}
	_, err = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bkt), Key: aws.String("missing")})
	if apiCode(err) != "NotFound" {
		t.Fatalf("HeadObject missing: %v", err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bkt), Key: aws.String("missing")})
	if apiCode(err) != "NoSuchKey" {
		t.Fatalf("GetObject missing: %v", err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("no-such-bucket"), Key: aws.String("k")})
	if apiCode(err) != "NoSuchBucket" {
		t.Fatalf("GetObject no bucket: %v", err)
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bkt), Key: aws.String("small.txt"), Range: aws.String("bytes=100-200")})
	if apiCode(err) != "InvalidRange" {
		t.Fatalf("GetObject bad range: %v", err)
	}

	// Listing: delimiter, prefix, pagination.
	l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bkt), Delimiter: aws.String("/")})
	if err != nil {
		t.Fatal(err)
	}
	if keys, cps := listed(l); keys != "[empty small.txt]" || cps != "[dir/ ünï/]" {
		t.Fatalf("list /: %s %s", keys, cps)
	}
	l, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bkt), Prefix: aws.String("dir/"), Delimiter: aws.String("/")})
	if err != nil {
		t.Fatal(err)
	}
	if keys, cps := listed(l); keys != "[dir/a b+c~(1).bin]" || cps != "[dir/sub/]" {
		t.Fatalf("list dir/: %s %s", keys, cps)
	}
	var all []string
	pages := 0
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bkt), MaxKeys: aws.Int32(2)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, o := range page.Contents {
			all = append(all, *o.Key)
		}
	}
	if fmt.Sprint(all) != "[dir/a b+c~(1).bin dir/sub/x dir/sub/y empty small.txt ünï/cödé]" || pages != 3 {
		t.Fatalf("paginated: %d pages %q", pages, all)
	}
	// Pagination over common prefixes does not repeat them.
	var cps []string
	p = s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bkt), MaxKeys: aws.Int32(1), Delimiter: aws.String("/")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		k, c := listed(page)
		cps = append(cps, k+c)
	}
	if fmt.Sprint(cps) != "[[][dir/] [empty][] [small.txt][] [][ünï/]]" {
		t.Fatalf("paginated prefixes: %q", cps)
	}
	l, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bkt), StartAfter: aws.String("empty")})
	if keys, _ := listed(l); err != nil || keys != "[small.txt ünï/cödé]" {
		t.Fatalf("start-after: %v %s", err, keys)
	}

	// Presigned GET fetched by a plain client.
	ps := s3.NewPresignClient(c)
	preq, err := ps.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bkt), Key: aws.String("dir/a b+c~(1).bin")}, s3.WithPresignExpires(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(preq.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, big) {
		t.Fatalf("presigned GET: %d %d bytes", resp.StatusCode, len(got))
	}
	// A presigned PUT too.
	pput, err := ps.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bkt), Key: aws.String("presigned-put")})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPut, pput.URL, bytes.NewReader([]byte("via presigned PUT")))
	for k, v := range pput.SignedHeader {
		req.Header[k] = v
	}
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("presigned PUT: %d", resp.StatusCode)
	}

	for k := range objs {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bkt), Key: aws.String(k)}); err != nil {
			t.Fatalf("DeleteObject %q: %v", k, err)
		}
	}
	l, err = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bkt)})
	if keys, _ := listed(l); err != nil || keys != "[presigned-put]" {
		t.Fatalf("after delete: %v %s", err, keys)
	}

	ns := notes(t, e, 1)
	for _, n := range ns {
		if countNotes([]string{n}, "sigv4: ok ("+testAKID) != 1 {
			t.Errorf("journal note: %s", n)
		}
	}
	if countNotes(ns, "presigned") != 2 {
		t.Errorf("want 2 presigned verdicts in %q", ns)
	}
}

func listed(l *s3.ListObjectsV2Output) (keys, prefixes string) {
	var k, p []string
	for _, o := range l.Contents {
		k = append(k, *o.Key)
	}
	for _, c := range l.CommonPrefixes {
		p = append(p, *c.Prefix)
	}
	return fmt.Sprint(k), fmt.Sprint(p)
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return fmt.Sprint(err)
}
