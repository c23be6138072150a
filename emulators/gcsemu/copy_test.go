package gcsemu

import (
	"crypto/md5"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
)

func doReq(t *testing.T, method, url string, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+goodToken)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// An XML API copy (x-goog-copy-source) copies the bytes: never a 0-byte
// object (the silent data loss of issue #15); a wrong Content-MD5 on an
// XML PUT is refused.
func TestXMLCopyAndContentMD5(t *testing.T) {
	for _, dir := range []string{"", t.TempDir()} {
		cfg := testConfig()
		cfg.DataDir = dir
		_, url := newTestServer(t, cfg)
		base := url + "/" + privBucket
		payload := strings.Repeat("copy me ", 5000)
		sum := md5.Sum([]byte(payload))
		resp, body := doReq(t, "PUT", base+"/orig.txt", payload, map[string]string{"Content-Type": "text/plain", "Content-MD5": base64.StdEncoding.EncodeToString(sum[:])})
		if resp.StatusCode != 200 {
			t.Fatalf("PUT: %d %s", resp.StatusCode, body)
		}
		resp, body = doReq(t, "PUT", base+"/bad.txt", payload, map[string]string{"Content-MD5": base64.StdEncoding.EncodeToString(make([]byte, 16))})
		if resp.StatusCode != 400 || !strings.Contains(body, "<Code>BadDigest</Code>") {
			t.Errorf("wrong Content-MD5: %d %s", resp.StatusCode, body)
		}
		resp, body = doReq(t, "PUT", base+"/copy.txt", "", map[string]string{"X-Goog-Copy-Source": "/" + privBucket + "/orig.txt"})
		if resp.StatusCode != 200 || !strings.Contains(body, "<CopyObjectResult>") {
			t.Fatalf("copy: %d %s", resp.StatusCode, body)
		}
		resp, body = doReq(t, "GET", base+"/copy.txt", "", nil)
		if resp.StatusCode != 200 || body != payload || resp.Header.Get("Content-Type") != "text/plain" {
			t.Fatalf("the copy: %d, %d bytes of %d, %s", resp.StatusCode, len(body), len(payload), resp.Header.Get("Content-Type"))
		}
		resp, body = doReq(t, "PUT", base+"/copy2.txt", "", map[string]string{"X-Goog-Copy-Source": privBucket + "/missing"})
		if resp.StatusCode != 404 || !strings.Contains(body, "<Code>NoSuchKey</Code>") {
			t.Errorf("copy of a missing object: %d %s", resp.StatusCode, body)
		}
		resp, _ = doReq(t, "PUT", base+"/copy3.txt", "", map[string]string{"X-Goog-Copy-Source": "/" + privBucket + "/orig.txt", "X-Goog-Metadata-Directive": "REPLACE", "Content-Type": "text/x-new"})
		if resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		if resp, body := doReq(t, "GET", base+"/copy3.txt", "", nil); body != payload || resp.Header.Get("Content-Type") != "text/x-new" {
			t.Errorf("REPLACE copy: %d bytes, %s", len(body), resp.Header.Get("Content-Type"))
		}
	}
}
