package main

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/gcsemu"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/s3emu"
)

const bucketConfig = `
origins:
  - name: s3
    originAddress: media-bucket.s3.eu-west-1.amazonaws.com
    protocol: HTTP
    port: S3PORT
    awsV4Authentication: {accessKeyId: AKIDEXAMPLE, secretAccessKeyVersion: projects/p/secrets/s3-secret/versions/1, originRegion: eu-west-1}
    originOverrideAction: {urlRewrite: {hostRewrite: media-bucket.s3.eu-west-1.amazonaws.com}}   # BKT-3
  - name: gcs
    originAddress: gs://vod-bucket
    originOverrideAction: {urlRewrite: {hostRewrite: ignored.example.com}}
service:
  name: media
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: routes}]
    pathMatchers:
      - name: routes
        routeRules:
          - {priority: 1, matchRules: [{prefixMatch: /s3/}], origin: s3, routeMethods: {allowedMethods: [GET, HEAD, POST]}}
          - {priority: 2, matchRules: [{prefixMatch: /gcs/}], origin: gcs, routeAction: {urlRewrite: {hostRewrite: route.example.com}}}
`

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// BKT-1: a secret not found is a startup error naming the origin and the
// file looked for, for serve and for validate --secrets.
func TestMissingSecret(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, filepath.Join(dir, "c.yaml"), strings.ReplaceAll(bucketConfig, "S3PORT", "8080"))
	secretsDir := filepath.Join(dir, "secrets")
	os.Mkdir(secretsDir, 0o755)
	wantFile := filepath.Join(secretsDir, "s3-secret", "1")
	for _, tc := range []struct {
		args     []string
		code     int
		contains []string
	}{
		{[]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--secrets", secretsDir}, 1,
			[]string{"awsV4Authentication.secretAccessKeyVersion", `origin "s3"`, wantFile, filepath.Join(secretsDir, "s3-secret")}},
		{[]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0"}, 1, []string{`origin "s3"`, "--secrets DIR"}},
		{[]string{"validate", "--config", cfg, "--secrets", secretsDir}, 1, []string{`origin "s3"`, wantFile}},
		{[]string{"validate", "--config", cfg}, 0, []string{"valid"}},
		{[]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--gcs-endpoint", "ftp://x"}, 2, []string{"--gcs-endpoint"}},
	} {
		var out, errOut strings.Builder
		code := exitCode(run(context.Background(), tc.args, &out, &errOut), &errOut)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s%s)", tc.args, code, tc.code, out.String(), errOut.String())
		}
		for _, c := range tc.contains {
			if !strings.Contains(out.String()+errOut.String(), c) {
				t.Errorf("%v: output lacks %q:\n%s%s", tc.args, c, out.String(), errOut.String())
			}
		}
	}
	// The token file must exist.
	writeFile(t, filepath.Join(secretsDir, "s3-secret", "1"), "secret\n")
	var out, errOut strings.Builder
	err := run(context.Background(), []string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--secrets", secretsDir,
		"--gcs-token-file", filepath.Join(dir, "no-token")}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--gcs-token-file") {
		t.Errorf("missing token file: %v", err)
	}
}

// BKT-1..4, HST-4 through the command: --secrets, --gcs-endpoint and
// --gcs-token-file.
func TestServeBuckets(t *testing.T) {
	// The S3 origin is s3emu, serving bucket media-bucket on its virtual
	// host media-bucket.s3.eu-west-1.amazonaws.com and verifying SigV4.
	s3, err := s3emu.New(s3emu.Config{Region: "eu-west-1", Credentials: map[string]string{"AKIDEXAMPLE": "s3cr3t"},
		Buckets: []s3emu.BucketConfig{{Name: "media-bucket", Objects: []s3emu.ObjectConfig{
			{Key: "s3/a.ts", Body: "s3 object", CacheControl: "max-age=60"},
			{Key: "s3/big.ts", Size: 3 << 20, CacheControl: "max-age=60"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	// The gs:// origin is gcsemu: the private bucket vod-bucket, read
	// path style on the IP endpoint with the token in --gcs-token-file.
	gcs, err := gcsemu.New(gcsemu.Config{Tokens: []string{"ya29.test-token"}, Buckets: []gcsemu.BucketConfig{
		{Name: "vod-bucket", Objects: []gcsemu.ObjectConfig{{Name: "gcs/seg.ts", Body: "gcs object"}, {Name: "gcs/rotated.ts", Body: "rotated"},
			{Name: "gcs/public.ts", Body: "public object", CacheControl: "public, max-age=60"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	emu, err := originemu.Start(context.Background(), originemu.Config{Logger: slog.New(slog.DiscardHandler), Listeners: []originemu.ListenerConfig{
		{Name: "s3", Profile: originemu.HTTP, Backend: s3}, {Name: "gcs", Profile: originemu.HTTP, Backend: gcs},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer emu.Close()
	dir := t.TempDir()
	_, s3port, _ := net.SplitHostPort(emu.Addr("s3"))
	cfg := writeFile(t, filepath.Join(dir, "c.yaml"), strings.ReplaceAll(bucketConfig, "S3PORT", s3port))
	writeFile(t, filepath.Join(dir, "secrets", "s3-secret"), "s3cr3t\n")
	token := writeFile(t, filepath.Join(dir, "token"), "ya29.test-token\n")

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--log-format", "text",
			"--secrets", filepath.Join(dir, "secrets"), "--resolve", "media-bucket.s3.eu-west-1.amazonaws.com=127.0.0.1",
			"--gcs-endpoint", "http://" + emu.Addr("gcs"), "--gcs-token-file", token}, pw, io.Discard)
		pw.Close()
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatalf("no output: %v", <-done)
	}
	edge, ok := strings.CutPrefix(sc.Text(), "listening ")
	if !ok {
		t.Fatalf("first line %q", sc.Text())
	}
	go io.Copy(io.Discard, pr)
	var last *http.Response // the last response, body read into lastBody
	var lastBody string
	do := func(method, path string) int {
		req, _ := http.NewRequest(method, edge+path, nil)
		req.Host = "media.example.com"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last, lastBody = resp, string(b)
		return resp.StatusCode
	}
	wait := func(listener, prefix string, n int) []journal.Request {
		wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer wcancel()
		q := journal.Query{Listener: listener, PathPrefix: prefix}
		emu.Journal().WaitEnded(wctx, q, n)
		return emu.Journal().Query(q).Requests
	}

	// The S3 origin gets the signed request, on the bucket's host; s3emu
	// accepts it.
	if code := do("GET", "/s3/a.ts"); code != 200 {
		t.Fatalf("GET s3: %d %+v", code, wait("s3", "/s3/", 1))
	}
	reqs := wait("s3", "/s3/a.ts", 1)
	if len(reqs) != 1 || !strings.Contains(reqs[0].Note, "sigv4: ok (AKIDEXAMPLE)") || !strings.Contains(strings.Join(headerValues(reqs[0], "Authorization"), ""), "SignedHeaders=host;x-amz-content-sha256;x-amz-date") {
		t.Fatalf("s3 journal %+v", reqs)
	}
	// With caching: the second GET is a hit; a 3 MiB object is filled with
	// two signed 2 MiB range requests (RNG-2, BKT-2: Range is not signed)
	// and then served from the cache.
	if code := do("GET", "/s3/a.ts"); code != 200 || last.Header.Get("Cache-Status") != "edgecache; hit" || lastBody != "s3 object" {
		t.Fatalf("second GET s3: %d %q", code, last.Header.Get("Cache-Status"))
	}
	for i, want := range []string{"edgecache; fwd=miss", "edgecache; hit"} {
		if code := do("GET", "/s3/big.ts"); code != 200 || len(lastBody) != 3<<20 || last.Header.Get("Cache-Status") != want {
			t.Fatalf("GET s3 big #%d: %d, %d bytes, %q %v", i+1, code, len(lastBody), last.Header.Get("Cache-Status"), last.Header)
		}
	}
	reqs = wait("s3", "/s3/", 3)
	if len(reqs) != 3 || reqs[1].Range != "bytes=0-2097151" || reqs[2].Range != "bytes=2097152-3145727" ||
		!strings.Contains(reqs[1].Note, "sigv4: ok") || !strings.Contains(reqs[2].Note, "sigv4: ok") {
		t.Fatalf("s3 journal after caching: %+v", reqs)
	}
	// POST to the S3 origin: 502, no origin request.
	if code := do("POST", "/s3/post"); code != 502 {
		t.Fatalf("POST s3: %d", code)
	}
	if reqs := wait("s3", "/s3/post", 0); len(reqs) != 0 {
		t.Fatalf("POST reached the origin: %+v", reqs)
	}
	// gs://: path-style on the IP endpoint, hostRewrites ignored, bearer
	// token; gcsemu reads the private bucket with it.
	if code := do("GET", "/gcs/seg.ts"); code != 200 || lastBody != "gcs object" {
		t.Fatalf("GET gcs: %d %q %+v", code, lastBody, wait("gcs", "/vod-bucket/", 1))
	}
	reqs = wait("gcs", "/vod-bucket/gcs/seg.ts", 1)
	if len(reqs) != 1 || reqs[0].Host != emu.Addr("gcs") || strings.Join(headerValues(reqs[0], "Authorization"), "") != "Bearer ya29.test-token" ||
		!strings.Contains(reqs[0].Note, "gcs: token ok") {
		t.Fatalf("gcs journal %+v", emu.Journal().Query(journal.Query{Listener: "gcs"}).Requests)
	}
	// BKT-5: the client sees Cloud Storage's Cache-Control (a private
	// bucket's) and x-goog-hash.
	if cc := last.Header.Get("Cache-Control"); cc != "private, max-age=0" {
		t.Errorf("client Cache-Control %q", cc)
	}
	if h := last.Header.Get("X-Goog-Hash"); h != googHash("gcs object") {
		t.Errorf("client x-goog-hash %q", h)
	}
	// BKT-5: cached by Cloud Storage's Cache-Control: the private
	// bucket's default (private, max-age=0) is not stored; an object's
	// own "public, max-age=60" is.
	do("GET", "/gcs/seg.ts")
	if cs := last.Header.Get("Cache-Status"); cs != "edgecache; fwd=miss" {
		t.Fatalf("second GET gcs private: Cache-Status %q, want a miss", cs)
	}
	for i, want := range []string{"edgecache; fwd=miss", "edgecache; hit"} {
		if code := do("GET", "/gcs/public.ts"); code != 200 || lastBody != "public object" || last.Header.Get("Cache-Status") != want {
			t.Fatalf("GET gcs public #%d: %d %q %q", i+1, code, lastBody, last.Header.Get("Cache-Status"))
		}
	}
	if reqs := wait("gcs", "/vod-bucket/gcs/public.ts", 1); len(reqs) != 1 {
		t.Fatalf("gcs public: %d origin requests, want 1", len(reqs))
	}
	// A token gcsemu does not accept (the file now holds another one,
	// re-read as it changed) is refused with 401, passed on to the client.
	writeFile(t, token, "ya29.not-accepted-token\n")
	if code := do("GET", "/gcs/rotated.ts"); code != 401 || !strings.Contains(lastBody, "<Code>AuthenticationRequired</Code>") {
		t.Fatalf("GET gcs, wrong token: %d %q", code, lastBody)
	}
	reqs = wait("gcs", "/vod-bucket/gcs/rotated.ts", 1)
	if len(reqs) != 1 || strings.Join(headerValues(reqs[0], "Authorization"), "") != "Bearer ya29.not-accepted-token" ||
		!strings.Contains(reqs[0].Note, "gcs: bad token") {
		t.Fatalf("gcs journal %+v", reqs)
	}
}

// googHash is the x-goog-hash Cloud Storage sends for body.
func googHash(body string) string {
	var c [4]byte
	binary.BigEndian.PutUint32(c[:], crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)))
	m := md5.Sum([]byte(body))
	return "crc32c=" + base64.StdEncoding.EncodeToString(c[:]) + ",md5=" + base64.StdEncoding.EncodeToString(m[:])
}

func headerValues(r journal.Request, name string) []string {
	var out []string
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, name) {
			out = append(out, h.Value)
		}
	}
	return out
}
