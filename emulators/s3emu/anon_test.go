package s3emu

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/synth"
)

// An AnonymousRead bucket serves unsigned GET, HEAD and list requests;
// writes and private buckets are AccessDenied.
func TestAnonymous(t *testing.T) {
	_, e, base := startS3(t, Config{Buckets: []BucketConfig{
		{Name: "public", AnonymousRead: true, Objects: []ObjectConfig{
			{Key: "hello.txt", Body: "hello", ContentType: "text/plain", CacheControl: "max-age=60"},
			{Key: "big.bin", Size: 3 << 20},
		}},
		{Name: "private", Objects: []ObjectConfig{{Key: "secret", Body: "no"}}},
	}})
	do := func(method, path string, body string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, b
	}
	resp, body := do("GET", "/public/hello.txt", "")
	if resp.StatusCode != 200 || string(body) != "hello" || resp.Header.Get("Cache-Control") != "max-age=60" ||
		resp.Header.Get("Content-Type") != "text/plain" || resp.Header.Get("ETag") != md5ETag([]byte("hello")) || resp.Header.Get("X-Amz-Request-Id") == "" {
		t.Fatalf("anonymous GET: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	so := synth.Object{Path: "/public/big.bin", Size: 3 << 20, Version: "1"}
	req, _ := http.NewRequest("GET", base+"/public/big.bin", nil)
	req.Header.Set("Range", "bytes=1000000-1000999")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 206 || synth.Verify(so, 1000000, body) != nil || len(body) != 1000 || resp.Header.Get("ETag") != so.ETag() {
		t.Fatalf("anonymous ranged synthetic GET: %d %d bytes %v", resp.StatusCode, len(body), synth.Verify(so, 1000000, body))
	}
	req, _ = http.NewRequest("GET", base+"/public/hello.txt", nil)
	req.Header.Set("If-None-Match", md5ETag([]byte("hello")))
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 304 {
		t.Fatalf("If-None-Match: %d", resp.StatusCode)
	}
	req.Header.Del("If-None-Match")
	req.Header.Set("If-Match", `"other"`)
	resp, _ = http.DefaultClient.Do(req)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 412 || !bytes.Contains(body, []byte("<Code>PreconditionFailed</Code>")) {
		t.Fatalf("If-Match: %d %s", resp.StatusCode, body)
	}
	if resp, body = do("GET", "/public?list-type=2", ""); resp.StatusCode != 200 || !bytes.Contains(body, []byte("<Key>big.bin</Key>")) {
		t.Fatalf("anonymous list: %d %s", resp.StatusCode, body)
	}
	if resp, _ = do("HEAD", "/public/hello.txt", ""); resp.StatusCode != 200 || resp.ContentLength != 5 {
		t.Fatalf("anonymous HEAD: %d", resp.StatusCode)
	}
	for _, c := range []struct{ method, path, code string }{
		{"PUT", "/public/new", "AccessDenied"},
		{"DELETE", "/public/hello.txt", "AccessDenied"},
		{"PUT", "/newbucket", "AccessDenied"},
		{"GET", "/private/secret", "AccessDenied"},
		{"GET", "/private?list-type=2", "AccessDenied"},
		{"GET", "/nosuch/key", "NoSuchBucket"},
		{"GET", "/public/missing", "NoSuchKey"},
		{"GET", "/", "AccessDenied"},
	} {
		resp, body := do(c.method, c.path, "data")
		if !bytes.Contains(body, []byte("<Code>"+c.code+"</Code>")) || !bytes.Contains(body, []byte("<RequestId>")) {
			t.Errorf("anonymous %s %s: %d %s, want %s", c.method, c.path, resp.StatusCode, body, c.code)
		}
	}
	if resp, _ = do("GET", "/public/hello.txt", ""); resp.StatusCode != 200 {
		t.Fatalf("object deleted anonymously")
	}
	ns := notes(t, e, 1)
	if countNotes(ns, "=> anonymous") != len(ns) {
		t.Errorf("journal notes: %q", ns)
	}
}
