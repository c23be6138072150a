package gcsemu

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRequest throws arbitrary methods, hosts, paths, queries, headers and
// bodies (multipart included) at the handler: it must never panic and
// always answer a valid status.
func FuzzRequest(f *testing.F) {
	mp := "--B\r\nContent-Type: application/json\r\n\r\n{\"name\":\"m\"}\r\n--B\r\nContent-Type: text/plain\r\n\r\nbody\r\n--B--\r\n"
	seeds := []struct{ method, host, target, ctype, extra, body string }{
		{"GET", "", "/pub-bucket/hello.txt", "", "Range: bytes=1-3", ""},
		{"HEAD", "pub-bucket.storage.googleapis.com", "/hello.txt", "", "If-None-Match: *", ""},
		{"PUT", "pub-bucket.storage.googleapis.com", "/a%2Fb", "text/plain", "X-Goog-Hash: crc32c=AAAAAA==,md5=x", "data"},
		{"GET", "", "/storage/v1/b/pub-bucket/o?prefix=d&delimiter=/&maxResults=1&pageToken=ZA", "", "", ""},
		{"GET", "", "/storage/v1/b/pub-bucket/o/hello.txt?alt=media&ifGenerationMatch=1", "", "Authorization: Bearer x", ""},
		{"GET", "", "/download/storage/v1/b/priv-bucket/o/secret.txt", "", "Authorization: Bearer good-token", ""},
		{"POST", "", "/upload/storage/v1/b/pub-bucket/o?uploadType=multipart", "multipart/related; boundary=B", "Authorization: Bearer good-token", mp},
		{"POST", "", "/upload/storage/v1/b/pub-bucket/o?uploadType=media&name=x", "text/plain", "", "abc"},
		{"POST", "", "/upload/storage/v1/b/pub-bucket/o?uploadType=resumable&name=r", "", "", "{}"},
		{"PUT", "", "/upload/storage/v1/b/pub-bucket/o?upload_id=SESSION", "", "Content-Range: bytes 0-2/*", "abc"},
		{"DELETE", "", "/storage/v1/b/pub-bucket/o/%ZZ", "", "", ""},
		{"GET", "pub-bucket.x", "/?max-keys=1&marker=a", "", "", ""},
	}
	for _, s := range seeds {
		f.Add(s.method, s.host, s.target, s.ctype, s.extra, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, host, target, ctype, extra string, body []byte) {
		srv, err := New(testConfig()) // fresh state: no growth across runs
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
		// A resumable session to aim chunks at: SESSION becomes its id.
		if strings.Contains(target, "SESSION") {
			start := httptest.NewRequest("POST", "/upload/storage/v1/b/pub-bucket/o?uploadType=resumable&name=f", nil)
			start.Header.Set("Authorization", "Bearer good-token")
			rec := httptest.NewRecorder()
			srv.ServeHTTP(rec, start)
			_, id, _ := strings.Cut(rec.Header().Get("Location"), "upload_id=")
			target = strings.ReplaceAll(target, "SESSION", id)
		}
		req, err := http.NewRequest("GET", "http://localhost"+target, bytes.NewReader(body))
		if err != nil {
			return
		}
		req.Method = method
		if host != "" {
			req.Host = host
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if k, v, ok := strings.Cut(extra, ":"); ok {
			req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code < 200 || rec.Code > 599 {
			t.Fatalf("status %d", rec.Code)
		}
	})
}
