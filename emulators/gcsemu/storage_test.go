package gcsemu

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

	"google.golang.org/api/googleapi"

	"github.com/edgeconform/edgeconform/emulators/rules"
)

// With a data directory, a resumable upload by the Go client streams into
// one file there, reads back byte for byte, survives a restart, and its
// file goes away with the object; maxBytes refuses an upload past the bound
// with 507.
func TestDataDirAndBound(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.DataDir, cfg.MaxBytes = dir, 24<<20
	srv, url := newTestServer(t, cfg)
	c := newClient(t, url, goodToken)
	data := make([]byte, 20<<20+5)
	rand.Read(data)
	obj := c.Bucket(privBucket).Object("big/movie.bin")
	attrs := writeObject(t, obj, data, 8<<20, "video/mp4")
	if attrs.Size != int64(len(data)) {
		t.Fatalf("size %d", attrs.Size)
	}
	blobs, _ := filepath.Glob(filepath.Join(dir, "blobs", "*"))
	var sizes []int64
	for _, b := range blobs {
		fi, _ := os.Stat(b)
		sizes = append(sizes, fi.Size())
	}
	// The configured small objects are blobs too; one file holds the upload.
	found := false
	for _, sz := range sizes {
		found = found || sz == int64(len(data))
	}
	if !found {
		t.Fatalf("no blob file of %d bytes: %v", len(data), sizes)
	}
	if o := srv.store.get(privBucket, "big/movie.bin"); o == nil || o.blob.Name() == "" {
		t.Fatal("the upload is not a disk blob")
	}
	// Past the bound: 20 MiB stored, 8 more do not fit in 24.
	w := c.Bucket(privBucket).Object("more.bin").NewWriter(context.Background())
	w.ChunkSize = 0
	w.Write(data[:8<<20])
	err := w.Close()
	var ge *googleapi.Error
	if !errors.As(err, &ge) || ge.Code != http.StatusInsufficientStorage {
		t.Fatalf("upload past maxBytes: %v, want 507", err)
	}
	_, url2 := newTestServer(t, cfg)
	c2 := newClient(t, url2, goodToken)
	got := readAll(t)(c2.Bucket(privBucket).Object("big/movie.bin").NewReader(context.Background()))
	if !bytes.Equal(got, data) {
		t.Fatalf("after a restart: %d bytes", len(got))
	}
	if err := c2.Bucket(privBucket).Object("big/movie.bin").Delete(context.Background()); err != nil {
		t.Fatal(err)
	}
	blobs, _ = filepath.Glob(filepath.Join(dir, "blobs", "*"))
	for _, b := range blobs {
		if fi, _ := os.Stat(b); fi.Size() == int64(len(data)) {
			t.Fatalf("the deleted object's blob %s is still there", b)
		}
	}
	bad := testConfig()
	bad.MaxBytes, bad.UploadReadTimeout = -1, -1
	if _, err := New(bad); err == nil || !strings.Contains(err.Error(), "maxBytes") || !strings.Contains(err.Error(), "uploadReadTimeout") {
		t.Errorf("bad bounds: %v", err)
	}
}

// #12 item 9: an XML PUT that declares 1,000 bytes and sends 10 gets 408
// with Cloud Storage's XML error once the upload read timeout passes; the
// connection is closed and nothing is stored.
func TestStalledUpload(t *testing.T) {
	const timeout = 300 * time.Millisecond
	cfg := testConfig()
	cfg.UploadReadTimeout = rules.Duration(timeout)
	srv, url := newTestServer(t, cfg)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "PUT /"+privBucket+"/stalled HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+goodToken+"\r\nContent-Length: 1000\r\n\r\n0123456789")
	start := time.Now()
	conn.SetReadDeadline(time.Now().Add(timeout + 20*time.Second))
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer to a stalled upload: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if el := time.Since(start); el < timeout-50*time.Millisecond {
		t.Errorf("answered after %v, before the %v timeout", el, timeout)
	}
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "<Code>RequestTimeout</Code>") || !strings.Contains(string(body), "after 10 bytes") {
		t.Fatalf("stalled upload: %d %s", resp.StatusCode, body)
	}
	if _, err := br.ReadByte(); err == nil {
		t.Error("connection still open after the timeout")
	}
	if srv.store.get(privBucket, "stalled") != nil {
		t.Error("a stalled upload was stored")
	}
}
