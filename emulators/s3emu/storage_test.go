package s3emu

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/edgeconform/edgeconform/emulators/rules"
)

// With a data directory, an upload lands in a file there (not in memory),
// reads back byte for byte, survives a restart and its file goes away
// with the object; MaxBytes refuses an upload past the bound with 507.
func TestDataDirAndBound(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, MaxBytes: 3 << 20, Buckets: []BucketConfig{{Name: "disk"}}}
	srv, _, base := startS3(t, cfg)
	ctx := context.Background()
	c := sdkClient(base)
	body := make([]byte, 2<<20+17)
	rand.Read(body)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("disk"), Key: aws.String("big.bin"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	if got := content(t, srv, "disk", "big.bin"); !bytes.Equal(got, body) {
		t.Fatalf("stored %d bytes, not the %d sent", len(got), len(body))
	}
	blobs, _ := filepath.Glob(filepath.Join(dir, "blobs", "*"))
	if len(blobs) != 1 {
		t.Fatalf("blob files %v, want one", blobs)
	}
	if fi, _ := os.Stat(blobs[0]); fi.Size() != int64(len(body)) {
		t.Fatalf("blob file has %d bytes", fi.Size())
	}
	o, _ := srv.store.get("disk", "big.bin")
	if o.blob.Name() == "" {
		t.Fatal("the object is not a disk blob")
	}
	// The bound: 2 MiB stored, another 2 MiB does not fit in 3 MiB.
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("disk"), Key: aws.String("more.bin"), Body: bytes.NewReader(body)})
	if apiCode(err) != "InsufficientStorage" {
		t.Fatalf("upload past maxBytes: %v, want InsufficientStorage", err)
	}
	if o, _ := srv.store.get("disk", "more.bin"); o != nil {
		t.Fatal("a refused upload was stored")
	}
	if blobs, _ := filepath.Glob(filepath.Join(dir, "blobs", "*")); len(blobs) != 1 {
		t.Fatalf("a refused upload left files: %v", blobs)
	}
	// Overwriting releases the old bytes: the bound still admits it.
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("disk"), Key: aws.String("big.bin"), Body: bytes.NewReader(body[:512<<10])}); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	srv2, _, base2 := startS3(t, cfg)
	out, err := sdkClient(base2).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("disk"), Key: aws.String("big.bin")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if !bytes.Equal(got, body[:512<<10]) {
		t.Fatalf("after a restart: %d bytes", len(got))
	}
	if _, err := sdkClient(base2).DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("disk"), Key: aws.String("big.bin")}); err != nil {
		t.Fatal(err)
	}
	if blobs, _ := filepath.Glob(filepath.Join(dir, "blobs", "*")); len(blobs) != 0 || srv2.store.blobs.Used() != 0 {
		t.Fatalf("after delete: files %v, %d bytes used", blobs, srv2.store.blobs.Used())
	}
	if _, err := New(Config{MaxBytes: -1}); err == nil || !strings.Contains(err.Error(), "maxBytes") {
		t.Errorf("negative maxBytes: %v", err)
	}
}

// #12 item 9: an upload that declares 1,000 bytes and sends 10 gets 400
// RequestTimeout once the upload read timeout passes, and its connection is
// closed; nothing is stored.
func TestStalledUpload(t *testing.T) {
	const timeout = 300 * time.Millisecond
	srv, _, base := startS3(t, Config{UploadReadTimeout: rules.Duration(timeout), Buckets: []BucketConfig{{Name: "slow"}}})
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest(http.MethodPut, base+"/slow/stalled", pr)
	req.ContentLength = 1000
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, "UNSIGNED-PAYLOAD", "s3", testRegion, time.Now()); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go req.Write(conn)
	pw.Write([]byte("0123456789"))
	start := time.Now()
	conn.SetReadDeadline(time.Now().Add(timeout + 20*time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatalf("no answer to a stalled upload: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if el := time.Since(start); el < timeout-50*time.Millisecond {
		t.Errorf("answered after %v, before the %v timeout", el, timeout)
	}
	if resp.StatusCode != 400 || !strings.Contains(string(got), "<Code>RequestTimeout</Code>") || !strings.Contains(string(got), "after 10 bytes") {
		t.Fatalf("stalled upload: %d %s", resp.StatusCode, got)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Error("connection still open after RequestTimeout")
	}
	if o, _ := srv.store.get("slow", "stalled"); o != nil {
		t.Error("a stalled upload was stored")
	}
}

// Conditional writes: If-None-Match: * creates only, If-Match overwrites
// only the named version; each refusal is S3's 412 XML.
func TestConditionalWrites(t *testing.T) {
	_, _, base := startS3(t, Config{Buckets: []BucketConfig{{Name: "cond"}}})
	ctx := context.Background()
	c := sdkClient(base)
	put := func(body string, mod func(*s3.PutObjectInput)) (*s3.PutObjectOutput, error) {
		in := &s3.PutObjectInput{Bucket: aws.String("cond"), Key: aws.String("k"), Body: strings.NewReader(body)}
		mod(in)
		return c.PutObject(ctx, in)
	}
	first, err := put("one", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") })
	if err != nil {
		t.Fatalf("create with If-None-Match: *: %v", err)
	}
	if _, err := put("two", func(in *s3.PutObjectInput) { in.IfNoneMatch = aws.String("*") }); apiCode(err) != "PreconditionFailed" {
		t.Fatalf("second create: %v, want PreconditionFailed", err)
	}
	if _, err := put("two", func(in *s3.PutObjectInput) { in.IfMatch = aws.String(`"0000"`) }); apiCode(err) != "PreconditionFailed" {
		t.Fatalf("If-Match on another ETag: %v", err)
	}
	if _, err := put("two", func(in *s3.PutObjectInput) { in.IfMatch = first.ETag }); err != nil {
		t.Fatalf("If-Match on the current ETag: %v", err)
	}
	out, _ := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("cond"), Key: aws.String("k")})
	got, _ := io.ReadAll(out.Body)
	if string(got) != "two" {
		t.Fatalf("object is %q", got)
	}
	var ae interface{ ErrorCode() string }
	_, err = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cond"), Key: aws.String("missing"), Body: strings.NewReader("x"), IfMatch: aws.String(`"x"`)})
	if !errors.As(err, &ae) || ae.ErrorCode() != "NoSuchKey" {
		t.Fatalf("If-Match on a missing key: %v", err)
	}
}

// Checksums sent with an upload are stored and returned with
// ChecksumMode=ENABLED; user metadata comes back under lower-case names.
func TestChecksumsAndMetadata(t *testing.T) {
	_, _, base := startS3(t, Config{Buckets: []BucketConfig{{Name: "sums"}}})
	ctx := context.Background()
	c := sdkClient(base)
	for _, alg := range []types.ChecksumAlgorithm{types.ChecksumAlgorithmCrc32, types.ChecksumAlgorithmCrc32c, types.ChecksumAlgorithmSha1, types.ChecksumAlgorithmSha256, types.ChecksumAlgorithmCrc64nvme} {
		key := "obj-" + string(alg)
		put, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sums"), Key: aws.String(key), Body: strings.NewReader("123456789"),
			ChecksumAlgorithm: alg, Metadata: map[string]string{"Color": "blue"}})
		if err != nil {
			t.Fatalf("%s: %v", alg, err)
		}
		head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("sums"), Key: aws.String(key), ChecksumMode: types.ChecksumModeEnabled})
		if err != nil {
			t.Fatal(err)
		}
		var sent, got *string
		switch alg {
		case types.ChecksumAlgorithmCrc32:
			sent, got = put.ChecksumCRC32, head.ChecksumCRC32
		case types.ChecksumAlgorithmCrc32c:
			sent, got = put.ChecksumCRC32C, head.ChecksumCRC32C
		case types.ChecksumAlgorithmSha1:
			sent, got = put.ChecksumSHA1, head.ChecksumSHA1
		case types.ChecksumAlgorithmSha256:
			sent, got = put.ChecksumSHA256, head.ChecksumSHA256
		case types.ChecksumAlgorithmCrc64nvme:
			sent, got = put.ChecksumCRC64NVME, head.ChecksumCRC64NVME
		}
		if got == nil || sent == nil || *got != *sent {
			t.Errorf("%s: PUT returned %v, HEAD %v", alg, aws.ToString(sent), aws.ToString(got))
		}
		if head.Metadata["color"] != "blue" {
			t.Errorf("metadata %v", head.Metadata)
		}
	}
	// The header's spelling on the wire (net/http's client would
	// canonicalize it).
	req, _ := http.NewRequest(http.MethodHead, base+"/sums/obj-CRC32", nil)
	signReq(t, req)
	conn, err := net.Dial("tcp", req.URL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req.Write(conn)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	head := ""
	for {
		l, err := br.ReadString('\n')
		head += l
		if err != nil || l == "\r\n" {
			break
		}
	}
	if !strings.Contains(head, "\r\nx-amz-meta-color: blue\r\n") {
		t.Errorf("no lower-case x-amz-meta-color in %q", head)
	}
}

func signReq(t *testing.T, req *http.Request) {
	t.Helper()
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, "UNSIGNED-PAYLOAD", "s3", testRegion, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// The parts of a multipart upload that never completed do not outlive a
// restart on disk.
func TestUnfinishedPartsSwept(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Buckets: []BucketConfig{{Name: "sweep"}}}
	_, _, base := startS3(t, cfg)
	ctx := context.Background()
	c := sdkClient(base)
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("sweep"), Key: aws.String("k")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("sweep"), Key: aws.String("k"), UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: strings.NewReader("part")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("sweep"), Key: aws.String("kept"), Body: strings.NewReader("kept")}); err != nil {
		t.Fatal(err)
	}
	if blobs, _ := filepath.Glob(filepath.Join(dir, "blobs", "*")); len(blobs) != 2 {
		t.Fatalf("blobs before the restart: %v", blobs)
	}
	srv2, _, _ := startS3(t, cfg)
	if blobs, _ := filepath.Glob(filepath.Join(dir, "blobs", "*")); len(blobs) != 1 || !bytes.Equal(content(t, srv2, "sweep", "kept"), []byte("kept")) {
		t.Fatalf("blobs after the restart: %v", blobs)
	}
}
