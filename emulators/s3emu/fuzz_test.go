package s3emu

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// FuzzVerify throws arbitrary Authorization headers, queries, headers and
// bodies (including aws-chunked ones) at the verifier and the handler: they
// never panic, and a request is accepted only with a verdict.
func FuzzVerify(f *testing.F) {
	srv, err := New(Config{
		Region:      testRegion,
		Credentials: map[string]string{testAKID: testSecret},
		Now:         func() time.Time { return tamperNow },
		Buckets:     []BucketConfig{{Name: "fuzz", AnonymousRead: true, Objects: []ObjectConfig{{Key: "k", Body: "fuzz body"}}}},
	})
	if err != nil {
		f.Fatal(err)
	}
	creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret}
	// Seeds: valid header-signed, presigned and streaming requests.
	for _, s := range []struct {
		method, uri, hash string
		body              []byte
	}{
		{"GET", "/fuzz/k", emptySHA256, nil},
		{"GET", "/fuzz?list-type=2&prefix=k&delimiter=%2F", emptySHA256, nil},
		{"PUT", "/fuzz/p", unsignedPayload, []byte("data")},
		{"PUT", "/fuzz/q", sha256Hex([]byte("data")), []byte("data")},
	} {
		req := httptest.NewRequest(s.method, "http://h.example"+s.uri, bytes.NewReader(s.body))
		req.Header.Set("X-Amz-Content-Sha256", s.hash)
		sdkSigner().SignHTTP(context.Background(), creds, req, s.hash, "s3", testRegion, tamperNow)
		f.Add(s.method, s.uri, "h.example", req.Header.Get("Authorization"), req.Header.Get("X-Amz-Date"), s.hash, "Range", "bytes=0-3", s.body)
	}
	preq := httptest.NewRequest("GET", "http://h.example/fuzz/k?X-Amz-Expires=300", nil)
	pu, _, _ := sdkSigner().PresignHTTP(context.Background(), creds, preq, unsignedPayload, "s3", testRegion, tamperNow)
	u, _ := url.Parse(pu)
	f.Add("GET", u.RequestURI(), "h.example", "", "", "", "", "", []byte(nil))
	sreq := minioStreaming(&testing.T{}, "http://h.example/fuzz/s", []byte(strings.Repeat("x", 70000)), true)
	sbody, _ := io.ReadAll(sreq.Body)
	f.Add("PUT", "/fuzz/s", "h.example", sreq.Header.Get("Authorization"), sreq.Header.Get("X-Amz-Date"), sreq.Header.Get("X-Amz-Content-Sha256"), "X-Amz-Decoded-Content-Length", "70000", sbody)
	f.Add("PUT", "/fuzz/u", "h.example", "", "", streamingUnsigned, "", "", []byte("4\r\nabcd\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"))

	f.Fuzz(func(t *testing.T, method, uri, host, authz, amzDate, hash, hname, hvalue string, body []byte) {
		if method == "" || strings.ContainsAny(method, " \r\n") {
			method = "GET"
		}
		pu, err := url.ParseRequestURI(uri)
		if err != nil {
			pu = &url.URL{Path: "/"}
			uri = "/"
		}
		req := &http.Request{
			Method: method, URL: pu, RequestURI: uri, Host: host, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		}
		req = req.WithContext(context.Background())
		for k, v := range map[string]string{"Authorization": authz, "X-Amz-Date": amzDate, "X-Amz-Content-Sha256": hash, hname: hvalue} {
			if v != "" && k != "" && !strings.ContainsAny(k, " :\r\n") {
				req.Header.Set(k, v)
			}
		}
		a, e := srv.verifier.verify(req)
		if (a == nil) == (e == nil) {
			t.Fatalf("verify returned %v and %v", a, e)
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code == 0 || w.Header().Get("X-Amz-Request-Id") == "" {
			t.Fatalf("no answer")
		}
	})
}
