package s3emu

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	neturl "net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// multipartETag is S3's ETag of a multipart object: the MD5 of the parts'
// MD5s, "-" and the number of parts.
func multipartETag(data []byte, partSize int) string {
	var sums []byte
	n := 0
	for off := 0; off < len(data); off += partSize {
		s := md5.Sum(data[off:min(off+partSize, len(data))])
		sums = append(sums, s[:]...)
		n++
	}
	all := md5.Sum(sums)
	return fmt.Sprintf(`"%s-%d"`, hex.EncodeToString(all[:]), n)
}

func getBytes(t *testing.T, c *s3.Client, bkt, key string) []byte {
	t.Helper()
	out, err := c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bkt), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("GetObject %s: %v", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The SDK's transfer manager uploads a 20 MiB object (5 MiB parts, sent
// concurrently) and one of unknown size; both read back whole with S3's
// multipart ETag, and its downloader reads them in ranged parts.
func TestSDKManagerMultipart(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		t.Run(map[bool]string{true: "memory", false: "disk"}[dir == ""], func(t *testing.T) {
			_, _, base := startS3(t, Config{DataDir: dir, Buckets: []BucketConfig{{Name: "mpu"}}})
			ctx := context.Background()
			c := sdkClient(base)
			size, unknown := 20<<20, 13<<20
			if raceEnabled {
				size, unknown = 6<<20, 6<<20 // still two 5 MiB-part uploads
			}
			data := randomBytes(size)
			up := manager.NewUploader(c, func(u *manager.Uploader) { u.PartSize = 5 << 20 })
			out, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: aws.String("mpu"), Key: aws.String("known"), Body: bytes.NewReader(data), ContentType: aws.String("video/mp4"), Metadata: map[string]string{"Origin": "manager"}})
			if err != nil {
				t.Fatalf("Upload: %v", err)
			}
			if want := multipartETag(data, 5<<20); aws.ToString(out.ETag) != want {
				t.Errorf("ETag %s, want %s", aws.ToString(out.ETag), want)
			}
			// Unknown size: an io.Reader without Len or Seek.
			if _, err := up.Upload(ctx, &s3.PutObjectInput{Bucket: aws.String("mpu"), Key: aws.String("unknown"), Body: io.MultiReader(bytes.NewReader(data[:unknown]))}); err != nil {
				t.Fatalf("Upload of unknown size: %v", err)
			}
			if got := getBytes(t, c, "mpu", "known"); !bytes.Equal(got, data) {
				t.Fatalf("read back %d bytes", len(got))
			}
			if got := getBytes(t, c, "mpu", "unknown"); !bytes.Equal(got, data[:unknown]) {
				t.Fatalf("unknown size: read back %d bytes", len(got))
			}
			head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("mpu"), Key: aws.String("known")})
			if err != nil || aws.ToString(head.ContentType) != "video/mp4" || head.Metadata["origin"] != "manager" || aws.ToInt64(head.ContentLength) != int64(len(data)) {
				t.Fatalf("HeadObject: %+v %v", head, err)
			}
			buf := manager.NewWriteAtBuffer(nil)
			dl := manager.NewDownloader(c, func(d *manager.Downloader) { d.PartSize = 4 << 20 })
			if n, err := dl.Download(ctx, buf, &s3.GetObjectInput{Bucket: aws.String("mpu"), Key: aws.String("known")}); err != nil || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
				t.Fatalf("Download: %d bytes, %v", n, err)
			}
			lu, err := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("mpu")})
			if err != nil || len(lu.Uploads) != 0 {
				t.Fatalf("uploads left after completing: %+v %v", lu, err)
			}
		})
	}
}

// minio-go's PutObject of 20 MiB and of unknown size (-1) go multipart.
func TestMinioMultipart(t *testing.T) {
	_, e, base := startS3(t, Config{Buckets: []BucketConfig{{Name: "mpu"}}})
	u, _ := neturl.Parse(base)
	mc, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(testAKID, testSecret, ""), Region: testRegion})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := randomBytes(20 << 20)
	for _, size := range []int64{int64(len(data)), -1} {
		key := fmt.Sprintf("obj%d", size)
		info, err := mc.PutObject(ctx, "mpu", key, bytes.NewReader(data), size, minio.PutObjectOptions{ContentType: "application/x-test", UserMetadata: map[string]string{"kind": "minio"}})
		if err != nil {
			t.Fatalf("PutObject size %d: %v", size, err)
		}
		if info.Size != int64(len(data)) || !strings.Contains(info.ETag, "-") {
			t.Errorf("size %d: info %+v, want a multipart upload", size, info)
		}
		obj, err := mc.GetObject(ctx, "mpu", key, minio.GetObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(obj)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: read back %d bytes, %v", size, len(got), err)
		}
		st, err := mc.StatObject(ctx, "mpu", key, minio.StatObjectOptions{})
		if err != nil || st.UserMetadata["Kind"] != "minio" {
			t.Fatalf("StatObject: %+v %v", st.UserMetadata, err)
		}
	}
	ns := notes(t, e, 0)
	if countNotes(ns, "uploadId=") == 0 && countNotes(ns, "s3: NotImplemented") > 0 {
		t.Errorf("multipart requests not served: %v", ns)
	}
}

// The low-level operations and their errors: part size rules, part order,
// unknown parts and ETags, ListParts, UploadPartCopy with a range, abort.
func TestMultipartOperations(t *testing.T) {
	_, _, base := startS3(t, Config{Buckets: []BucketConfig{{Name: "mpu"}}})
	ctx := context.Background()
	c := sdkClient(base)
	b, k := aws.String("mpu"), aws.String("obj")
	big, small := randomBytes(5<<20), randomBytes(1000)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: aws.String("src"), Body: bytes.NewReader(big)}); err != nil {
		t.Fatal(err)
	}
	create := func() string {
		out, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.UploadId)
	}
	part := func(id string, n int32, data []byte) string {
		out, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: aws.String(id), PartNumber: aws.Int32(n), Body: bytes.NewReader(data)})
		if err != nil {
			t.Fatalf("UploadPart %d: %v", n, err)
		}
		return aws.ToString(out.ETag)
	}
	complete := func(id string, parts ...types.CompletedPart) (*s3.CompleteMultipartUploadOutput, error) {
		return c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: aws.String(id), MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	}
	cp := func(n int32, etag string) types.CompletedPart {
		return types.CompletedPart{PartNumber: aws.Int32(n), ETag: aws.String(etag)}
	}

	id := create()
	e1, e2 := part(id, 1, small), part(id, 2, small)
	if _, err := complete(id, cp(1, e1), cp(2, e2)); apiCode(err) != "EntityTooSmall" {
		t.Errorf("a 1000-byte first part: %v, want EntityTooSmall", err)
	}
	e1 = part(id, 1, big) // replaces part 1
	if _, err := complete(id, cp(2, e2), cp(1, e1)); apiCode(err) != "InvalidPartOrder" {
		t.Errorf("parts out of order: %v, want InvalidPartOrder", err)
	}
	if _, err := complete(id, cp(1, e1), cp(3, e2)); apiCode(err) != "InvalidPart" {
		t.Errorf("a part never uploaded: %v, want InvalidPart", err)
	}
	if _, err := complete(id, cp(1, e2), cp(2, e2)); apiCode(err) != "InvalidPart" {
		t.Errorf("a wrong ETag: %v, want InvalidPart", err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: aws.String(id), PartNumber: aws.Int32(10001), Body: bytes.NewReader(small)}); apiCode(err) != "InvalidArgument" {
		t.Errorf("part 10001: %v, want InvalidArgument", err)
	}
	lp, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: k, UploadId: aws.String(id)})
	if err != nil || len(lp.Parts) != 2 || aws.ToInt64(lp.Parts[0].Size) != int64(len(big)) || aws.ToString(lp.Parts[1].ETag) != e2 {
		t.Fatalf("ListParts: %+v %v", lp, err)
	}
	// Part 3 copied from bytes 100-1099 of src.
	pc, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: k, UploadId: aws.String(id), PartNumber: aws.Int32(3), CopySource: aws.String("mpu/src"), CopySourceRange: aws.String("bytes=100-1099")})
	if err != nil {
		t.Fatalf("UploadPartCopy: %v", err)
	}
	e2big := part(id, 2, big)
	out, err := complete(id, cp(1, e1), cp(2, e2big), cp(3, aws.ToString(pc.CopyPartResult.ETag)))
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := append(append(append([]byte{}, big...), big...), big[100:1100]...)
	var sums []byte
	for _, p := range [][]byte{big, big, big[100:1100]} {
		s := md5.Sum(p)
		sums = append(sums, s[:]...)
	}
	all := md5.Sum(sums)
	if etag := fmt.Sprintf(`"%x-3"`, all); aws.ToString(out.ETag) != etag {
		t.Errorf("ETag %s, want %s", aws.ToString(out.ETag), etag)
	}
	if got := getBytes(t, c, "mpu", "obj"); !bytes.Equal(got, want) {
		t.Fatalf("completed object: %d bytes, want %d", len(got), len(want))
	}
	if _, err := complete(id, cp(1, e1)); apiCode(err) != "NoSuchUpload" {
		t.Errorf("completing twice: %v, want NoSuchUpload", err)
	}
	// Abort drops the upload and its parts.
	id2 := create()
	part(id2, 1, small)
	lu, _ := c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: b})
	if len(lu.Uploads) != 1 || aws.ToString(lu.Uploads[0].UploadId) != id2 {
		t.Fatalf("ListMultipartUploads: %+v", lu.Uploads)
	}
	if _, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: k, UploadId: aws.String(id2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListParts(ctx, &s3.ListPartsInput{Bucket: b, Key: k, UploadId: aws.String(id2)}); apiCode(err) != "NoSuchUpload" {
		t.Errorf("ListParts after abort: %v", err)
	}
	// The upload's checksum: composite over the parts' CRC32C.
	out2, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: aws.String("sum"), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c})
	if err != nil {
		t.Fatal(err)
	}
	p1, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: aws.String("sum"), UploadId: out2.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(small), ChecksumAlgorithm: types.ChecksumAlgorithmCrc32c})
	if err != nil {
		t.Fatal(err)
	}
	done, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: aws.String("sum"), UploadId: out2.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p1.ETag, ChecksumCRC32C: p1.ChecksumCRC32C}}}})
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: aws.String("sum"), ChecksumMode: types.ChecksumModeEnabled})
	if err != nil || aws.ToString(head.ChecksumCRC32C) == "" || !strings.HasSuffix(aws.ToString(head.ChecksumCRC32C), "-1") || aws.ToString(done.ChecksumCRC32C) != aws.ToString(head.ChecksumCRC32C) {
		t.Errorf("composite checksum: complete %v, head %v (%v)", aws.ToString(done.ChecksumCRC32C), aws.ToString(head.ChecksumCRC32C), err)
	}
}
