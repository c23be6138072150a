package gcsemu

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/synth"
)

type exchange struct {
	method, path, host, token string
	headers                   map[string]string
	body                      string
}

func do(t *testing.T, base string, x exchange) (*http.Response, string) {
	t.Helper()
	method := x.method
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequest(method, base+x.path, strings.NewReader(x.body))
	if err != nil {
		t.Fatal(err)
	}
	if x.host != "" {
		req.Host = x.host
	}
	if x.token != "" {
		req.Header.Set("Authorization", "Bearer "+x.token)
	}
	for k, v := range x.headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// wantHash is x-goog-hash computed independently of the server.
func wantHash(data []byte) string {
	var c [4]byte
	binary.BigEndian.PutUint32(c[:], crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)))
	m := md5.Sum(data)
	return "crc32c=" + base64.StdEncoding.EncodeToString(c[:]) + ",md5=" + base64.StdEncoding.EncodeToString(m[:])
}

func wantETag(data []byte) string {
	m := md5.Sum(data)
	return `"` + hex.EncodeToString(m[:]) + `"`
}

func TestXMLHeaders(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	cfg := testConfig()
	cfg.Now = func() time.Time { return now }
	_, base := newTestServer(t, cfg)
	body := []byte("hello, world\n")
	for _, x := range []exchange{
		{path: "/hello.txt", host: pubBucket + ".storage.googleapis.com"},
		{path: "/hello.txt", host: pubBucket + ".storage.googleapis.com:443"},
		{path: "/hello.txt", host: pubBucket + ".cdn.example"}, // AnyHost
		{path: "/" + pubBucket + "/hello.txt"},                 // path style
		{path: "/" + pubBucket + "/hello.txt", host: "storage.googleapis.com"},
	} {
		resp, got := do(t, base, x)
		if resp.StatusCode != 200 || got != string(body) {
			t.Fatalf("%+v: %d %q", x, resp.StatusCode, got)
		}
		gen := strconv.FormatInt(now.UnixMicro(), 10)
		for k, v := range map[string]string{
			"X-Goog-Generation":              gen,
			"X-Goog-Metageneration":          "1",
			"X-Goog-Hash":                    wantHash(body),
			"X-Goog-Stored-Content-Length":   "13",
			"X-Goog-Stored-Content-Encoding": "identity",
			"Etag":                           wantETag(body),
			"Last-Modified":                  "Wed, 04 Mar 2026 05:06:07 GMT",
			"Cache-Control":                  "public, max-age=3600",
			"Content-Type":                   "text/plain",
			"Accept-Ranges":                  "bytes",
			"Content-Length":                 "13",
		} {
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%+v: %s = %q, want %q", x, k, got, v)
			}
		}
	}
	// HEAD: same headers, no body.
	resp, got := do(t, base, exchange{method: "HEAD", path: "/hello.txt", host: pubBucket + ".storage.googleapis.com"})
	if resp.StatusCode != 200 || got != "" || resp.Header.Get("X-Goog-Hash") != wantHash(body) || resp.Header.Get("Content-Length") != "13" {
		t.Fatalf("HEAD: %d %q %v", resp.StatusCode, got, resp.Header)
	}
	// Object Cache-Control wins; synthetic content hashes.
	resp, _ = do(t, base, exchange{path: "/" + pubBucket + "/cached.css"})
	if resp.Header.Get("Cache-Control") != "public, max-age=60" {
		t.Fatalf("object Cache-Control: %q", resp.Header.Get("Cache-Control"))
	}
	syn := synth.Object{Path: "/" + pubBucket + "/dir/synthetic.bin", Size: 100000, Version: "1"}.Bytes()
	resp, got = do(t, base, exchange{path: "/" + pubBucket + "/dir/synthetic.bin"})
	if got != string(syn) || resp.Header.Get("X-Goog-Hash") != wantHash(syn) || resp.Header.Get("Etag") != wantETag(syn) {
		t.Fatalf("synthetic: %d bytes, %v", len(got), resp.Header)
	}
}

func TestXMLConditionalsAndRanges(t *testing.T) {
	_, base := newTestServer(t, testConfig())
	obj := "/" + pubBucket + "/hello.txt"
	resp, _ := do(t, base, exchange{path: obj})
	etag, gen := resp.Header.Get("Etag"), resp.Header.Get("X-Goog-Generation")

	resp, got := do(t, base, exchange{path: obj, headers: map[string]string{"Range": "bytes=7-11"}})
	if resp.StatusCode != 206 || got != "world" || resp.Header.Get("Content-Range") != "bytes 7-11/13" {
		t.Fatalf("range: %d %q %q", resp.StatusCode, got, resp.Header.Get("Content-Range"))
	}
	resp, got = do(t, base, exchange{path: obj, headers: map[string]string{"Range": "bytes=-6"}})
	if resp.StatusCode != 206 || got != "world\n" {
		t.Fatalf("suffix range: %d %q", resp.StatusCode, got)
	}
	resp, _ = do(t, base, exchange{path: obj, headers: map[string]string{"Range": "bytes=100-"}})
	if resp.StatusCode != 416 {
		t.Fatalf("unsatisfiable range: %d", resp.StatusCode)
	}
	for _, c := range []struct {
		h    map[string]string
		want int
	}{
		{map[string]string{"If-None-Match": etag}, 304},
		{map[string]string{"If-None-Match": `"other"`}, 200},
		{map[string]string{"If-Match": etag}, 200},
		{map[string]string{"If-Match": `"other"`}, 412},
		{map[string]string{"X-Goog-If-Generation-Match": gen}, 200},
		{map[string]string{"X-Goog-If-Generation-Match": "12345"}, 412},
		{map[string]string{"X-Goog-If-Generation-Not-Match": gen}, 412},
		{map[string]string{"X-Goog-If-Metageneration-Match": "1"}, 200},
		{map[string]string{"X-Goog-If-Generation-Match": "nope"}, 400},
	} {
		resp, body := do(t, base, exchange{path: obj, headers: c.h})
		if resp.StatusCode != c.want {
			t.Errorf("%v: %d, want %d", c.h, resp.StatusCode, c.want)
		}
		if c.want == 412 && strings.HasPrefix(c.h["X-Goog-If-Generation-Match"], "1") && !strings.Contains(body, "<Code>PreconditionFailed</Code>") {
			t.Errorf("412 body: %q", body)
		}
	}
	if resp, _ := do(t, base, exchange{path: obj + "?generation=" + gen}); resp.StatusCode != 200 {
		t.Errorf("?generation=current: %d", resp.StatusCode)
	}
	if resp, _ := do(t, base, exchange{path: obj + "?generation=1"}); resp.StatusCode != 404 {
		t.Errorf("?generation=old: %d", resp.StatusCode)
	}
}

func TestXMLErrorsAndAuth(t *testing.T) {
	_, base := newTestServer(t, testConfig())
	xmlErr := func(code string) string { return "<Error><Code>" + code + "</Code>" }
	for _, c := range []struct {
		x        exchange
		status   int
		code     string
		wwwAuth  bool
		contains string
	}{
		{exchange{path: "/" + pubBucket + "/missing"}, 404, "NoSuchKey", false, ""},
		{exchange{path: "/no-such-bucket/x"}, 404, "NoSuchBucket", false, ""},
		{exchange{path: "/x", host: "no-such-bucket.storage.googleapis.com"}, 404, "NoSuchBucket", false, ""},
		{exchange{path: "/" + privBucket + "/secret.txt"}, 403, "AccessDenied", false, ""},
		{exchange{path: "/secret.txt", host: privBucket + ".storage.googleapis.com"}, 403, "AccessDenied", false, ""},
		{exchange{path: "/" + privBucket + "/secret.txt", token: "bad"}, 401, "AuthenticationRequired", true, ""},
		{exchange{path: "/" + pubBucket + "/hello.txt", token: "bad"}, 401, "AuthenticationRequired", true, ""},
		{exchange{path: "/" + privBucket + "/secret.txt", token: goodToken}, 200, "", false, "top secret"},
		{exchange{path: "/" + privBucket + "/missing", token: goodToken}, 404, "NoSuchKey", false, ""},
		{exchange{method: "PUT", path: "/" + pubBucket + "/anon", body: "x"}, 403, "AccessDenied", false, ""},
		{exchange{method: "POST", path: "/" + pubBucket + "/x"}, 405, "MethodNotAllowed", false, ""},
	} {
		resp, body := do(t, base, c.x)
		if resp.StatusCode != c.status {
			t.Errorf("%+v: %d, want %d (%s)", c.x, resp.StatusCode, c.status, body)
			continue
		}
		if c.code != "" && (!strings.Contains(body, xmlErr(c.code)) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/xml")) {
			t.Errorf("%+v: body %q", c.x, body)
		}
		if c.contains != "" && body != c.contains {
			t.Errorf("%+v: body %q", c.x, body)
		}
		if got := resp.Header.Get("Www-Authenticate") != ""; got != c.wwwAuth {
			t.Errorf("%+v: WWW-Authenticate %q", c.x, resp.Header.Get("Www-Authenticate"))
		}
		if resp.Header.Get("Cache-Control") == "" {
			t.Errorf("%+v: no Cache-Control", c.x)
		}
	}
	// The private object's default Cache-Control.
	resp, _ := do(t, base, exchange{path: "/" + privBucket + "/secret.txt", token: goodToken})
	if resp.Header.Get("Cache-Control") != "private, max-age=0" {
		t.Errorf("private Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
}

func TestXMLPut(t *testing.T) {
	_, base := newTestServer(t, testConfig())
	host := pubBucket + ".storage.googleapis.com"
	data := []byte("uploaded through XML")
	resp, body := do(t, base, exchange{method: "PUT", path: "/new/obj.txt", host: host, token: goodToken, body: string(data),
		headers: map[string]string{"Content-Type": "text/x-new", "Cache-Control": "no-store", "X-Goog-If-Generation-Match": "0", "X-Goog-Hash": wantHash(data)}})
	if resp.StatusCode != 200 || resp.Header.Get("Etag") != wantETag(data) || resp.Header.Get("X-Goog-Hash") != wantHash(data) {
		t.Fatalf("PUT: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	gen := resp.Header.Get("X-Goog-Generation")
	resp, body = do(t, base, exchange{path: "/" + pubBucket + "/new/obj.txt"})
	if body != string(data) || resp.Header.Get("Content-Type") != "text/x-new" || resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Goog-Generation") != gen {
		t.Fatalf("GET after PUT: %q %v", body, resp.Header)
	}
	// Exists already: generation-match 0 fails; a wrong digest is refused.
	resp, _ = do(t, base, exchange{method: "PUT", path: "/new/obj.txt", host: host, token: goodToken, body: "x", headers: map[string]string{"X-Goog-If-Generation-Match": "0"}})
	if resp.StatusCode != 412 {
		t.Fatalf("PUT over existing with generation-match 0: %d", resp.StatusCode)
	}
	resp, body = do(t, base, exchange{method: "PUT", path: "/other", host: host, token: goodToken, body: "x", headers: map[string]string{"X-Goog-Hash": wantHash(data)}})
	if resp.StatusCode != 400 || !strings.Contains(body, "BadDigest") {
		t.Fatalf("PUT with a wrong digest: %d %q", resp.StatusCode, body)
	}
	resp, _ = do(t, base, exchange{method: "DELETE", path: "/new/obj.txt", host: host, token: goodToken})
	if resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	resp, _ = do(t, base, exchange{path: "/new/obj.txt", host: host})
	if resp.StatusCode != 404 {
		t.Fatalf("GET after DELETE: %d", resp.StatusCode)
	}
}
