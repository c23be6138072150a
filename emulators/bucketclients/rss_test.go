package bucketclients

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"
)

// rssLimit is the emulator's allowed peak RSS for 1 GiB uploads to
// disk-backed backends (issue #15).
const rssLimit = 128 << 20

// patterned is n bytes of a cheap repeating pattern, as a reader.
type patterned struct{ n, off int64 }

func (p *patterned) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	for i := range b {
		b[i] = byte((p.off + int64(i)) * 31 >> 3)
	}
	p.off += int64(len(b))
	return len(b), nil
}

// A 1 GiB multipart upload through the aws CLI and a 1 GiB resumable
// upload through the Go client, to disk-backed backends of one originemu
// process, keep its peak RSS (VmHWM) under 128 MiB. Slow (minutes on a
// loaded machine): runs only with EDGECONFORM_BUCKET_RSS=1 (make
// bucket-rss).
func TestUpload1GiBPeakRSS(t *testing.T) {
	if os.Getenv("EDGECONFORM_BUCKET_RSS") != "1" {
		t.Skip("set EDGECONFORM_BUCKET_RSS=1 (make bucket-rss) to upload 2 GiB and measure the emulator's peak RSS")
	}
	const size = 1 << 30
	e := startEmulator(t)
	ctx := context.Background()
	start := e.peakRSS(t)

	// The Go client: a resumable upload in 16 MiB chunks.
	c, err := storage.NewClient(ctx, option.WithEndpoint(e.gcs+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := c.Bucket(bucket).Object("1gib.bin").NewWriter(ctx)
	w.ChunkSize = 16 << 20
	if _, err := io.Copy(w, &patterned{n: size}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("1 GiB resumable upload: %v", err)
	}
	if a := w.Attrs(); a.Size != size {
		t.Fatalf("stored %d bytes", a.Size)
	}
	afterGCS := e.peakRSS(t)

	// The aws CLI: a multipart upload (8 MiB parts, 10 at a time).
	aws := client(t, "aws CLI", "/usr/bin/aws", "awscli")
	file := filepath.Join(t.TempDir(), "1gib.bin")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, &patterned{n: size}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	run(t, awsEnv(t), aws, "--endpoint-url", e.s3, "s3", "cp", file, "s3://"+bucket+"/1gib.bin")
	os.Remove(file)
	head := run(t, awsEnv(t), aws, "--endpoint-url", e.s3, "s3api", "head-object", "--bucket", bucket, "--key", "1gib.bin")
	if !strings.Contains(head, `"ContentLength": 1073741824`) {
		t.Fatalf("head-object: %s", head)
	}
	peak := e.peakRSS(t)
	t.Logf("originemu peak RSS: %.1f MiB at start, %.1f MiB after the 1 GiB Go client resumable upload, %.1f MiB after the 1 GiB aws CLI multipart upload (limit %d MiB)",
		float64(start)/(1<<20), float64(afterGCS)/(1<<20), float64(peak)/(1<<20), rssLimit>>20)
	if peak >= rssLimit {
		t.Errorf("peak RSS %.1f MiB, over %d MiB", float64(peak)/(1<<20), rssLimit>>20)
	}
}
