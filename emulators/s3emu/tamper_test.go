package s3emu

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/minio/minio-go/v7/pkg/signer"
)

var tamperNow = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

// signSpec says how a test request is signed.
type signSpec struct {
	akid, secret, region string
	at                   time.Time
	hash                 string // x-amz-content-sha256; "" means sha256 of the body
	noHashHeader         bool
}

func defaultSpec() signSpec {
	return signSpec{akid: testAKID, secret: testSecret, region: testRegion, at: tamperNow}
}

func sdkSigner() *v4.Signer {
	return v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// signedReq is a request signed with the AWS SDK's signer; mod runs before
// signing (to add headers that are then signed).
func signedReq(t *testing.T, method, url string, body []byte, spec signSpec, mod func(*http.Request)) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == nil {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	if spec.hash == "" {
		spec.hash = sha256Hex(body)
	}
	if !spec.noHashHeader {
		req.Header.Set("X-Amz-Content-Sha256", spec.hash)
	}
	if mod != nil {
		mod(req)
	}
	creds := aws.Credentials{AccessKeyID: spec.akid, SecretAccessKey: spec.secret}
	if err := sdkSigner().SignHTTP(context.Background(), creds, req, spec.hash, "s3", spec.region, spec.at); err != nil {
		t.Fatal(err)
	}
	return req
}

// presignedURL is a presigned URL made with the AWS SDK's signer.
func presignedURL(t *testing.T, method, url string, expires string, spec signSpec) string {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	q := req.URL.Query()
	q.Set("X-Amz-Expires", expires)
	req.URL.RawQuery = q.Encode()
	creds := aws.Credentials{AccessKeyID: spec.akid, SecretAccessKey: spec.secret}
	u, _, err := sdkSigner().PresignHTTP(context.Background(), creds, req, "UNSIGNED-PAYLOAD", "s3", spec.region, spec.at)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

type sha256Hasher struct{ hash.Hash }

func (sha256Hasher) Close() {}

// minioStreaming is a PUT signed by minio-go as a signed aws-chunked stream
// (with a crc32 trailer if trailer is set).
func minioStreaming(t *testing.T, url string, body []byte, trailer bool) *http.Request {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	if trailer {
		req.Trailer = http.Header{"X-Amz-Checksum-Crc32": {crc32B64(body)}}
	}
	req = signer.StreamingSignV4(req, testAKID, testSecret, "", testRegion, int64(len(body)), tamperNow, sha256Hasher{sha256.New()})
	return req
}

// unsignedTrailer is a PUT with a STREAMING-UNSIGNED-PAYLOAD-TRAILER body
// (minio-go's encoder) whose headers the AWS SDK signer signs.
func unsignedTrailer(t *testing.T, url string, body []byte, checksum string, decodedLen int) *http.Request {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	req.Trailer = http.Header{"X-Amz-Checksum-Crc32": {checksum}}
	req = signer.StreamingUnsignedV4(req, "", int64(len(body)), tamperNow)
	req.Header.Set("X-Amz-Decoded-Content-Length", strconv.Itoa(decodedLen))
	req.Header.Set("X-Amz-Content-Sha256", streamingUnsigned)
	creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: testSecret}
	if err := sdkSigner().SignHTTP(context.Background(), creds, req, streamingUnsigned, "s3", testRegion, tamperNow); err != nil {
		t.Fatal(err)
	}
	return req
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Replace(string(rune('0'))+"", "0", "", 1) + fmtInt(n))
}

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func crc32B64(b []byte) string {
	var sum [4]byte
	v := crc32.ChecksumIEEE(b)
	sum[0], sum[1], sum[2], sum[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// Valid requests signed by the AWS SDK's signer (and minio-go's streaming
// signer) are all accepted; the same requests with one thing changed are
// all rejected, each with S3's code for what changed.
func TestTampering(t *testing.T) {
	srv, e, base := startS3(t, Config{
		Now:     func() time.Time { return tamperNow },
		Buckets: []BucketConfig{{Name: "tbucket", Objects: []ObjectConfig{{Key: "obj", Body: "tamper me"}, {Key: "dir/a b é+(x).txt", Size: 5000}}}},
	})
	obj := base + "/tbucket/obj"
	spec := defaultSpec
	with := func(f func(*signSpec)) signSpec { s := spec(); f(&s); return s }
	bigBody := bytes.Repeat([]byte("0123456789abcdef"), 9000) // > 64 KiB: several chunks

	cases := []struct {
		name   string
		req    func(t *testing.T) *http.Request
		status int    // 0: accepted (2xx)
		code   string // expected error code
	}{
		// Untampered.
		{name: "GET", req: func(t *testing.T) *http.Request { return signedReq(t, "GET", obj, nil, spec(), nil) }},
		{name: "HEAD", req: func(t *testing.T) *http.Request { return signedReq(t, "HEAD", obj, nil, spec(), nil) }},
		{name: "GET signed Range", req: func(t *testing.T) *http.Request {
			return signedReq(t, "GET", obj, nil, spec(), func(r *http.Request) { r.Header.Set("Range", "bytes=0-5") })
		}},
		{name: "GET odd key", req: func(t *testing.T) *http.Request {
			return signedReq(t, "GET", base+"/tbucket/dir/a%20b%20%C3%A9%2B%28x%29.txt", nil, spec(), nil)
		}},
		{name: "GET header with inner spaces", req: func(t *testing.T) *http.Request {
			return signedReq(t, "GET", obj, nil, spec(), func(r *http.Request) { r.Header.Set("X-Amz-Meta-Note", "  a   b  c ") })
		}},
		{name: "GET signed 10 min ago", req: func(t *testing.T) *http.Request {
			return signedReq(t, "GET", obj, nil, with(func(s *signSpec) { s.at = tamperNow.Add(-10 * time.Minute) }), nil)
		}},
		{name: "list", req: func(t *testing.T) *http.Request {
			return signedReq(t, "GET", base+"/tbucket?list-type=2&prefix=d&delimiter=%2F&max-keys=5", nil, spec(), nil)
		}},
		{name: "PUT sha256", req: func(t *testing.T) *http.Request {
			return signedReq(t, "PUT", base+"/tbucket/new", []byte("new content"), spec(), nil)
		}},
		{name: "PUT UNSIGNED-PAYLOAD", req: func(t *testing.T) *http.Request {
			return signedReq(t, "PUT", base+"/tbucket/new2", []byte("unsigned"), with(func(s *signSpec) { s.hash = unsignedPayload }), nil)
		}},
		{name: "PUT signed stream", req: func(t *testing.T) *http.Request { return minioStreaming(t, base+"/tbucket/s1", bigBody, false) }},
		{name: "PUT signed stream with trailer", req: func(t *testing.T) *http.Request { return minioStreaming(t, base+"/tbucket/s2", bigBody, true) }},
		{name: "PUT unsigned trailer", req: func(t *testing.T) *http.Request {
			return unsignedTrailer(t, base+"/tbucket/s3", bigBody, crc32B64(bigBody), len(bigBody))
		}},
		{name: "presigned GET", req: func(t *testing.T) *http.Request {
			r, _ := http.NewRequest("GET", presignedURL(t, "GET", obj, "300", spec()), nil)
			return r
		}},

		// Tampered.
		{name: "host changed", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r := signedReq(t, "GET", obj, nil, spec(), nil)
			r.Host = "cdn-rewrote.example"
			return r
		}},
		{name: "path changed", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r := signedReq(t, "GET", obj, nil, spec(), nil)
			r.URL.Path = "/tbucket/other"
			return r
		}},
		{name: "path re-encoded", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r := signedReq(t, "GET", base+"/tbucket/dir/a%20b%20%C3%A9%2B%28x%29.txt", nil, spec(), nil)
			r.URL.RawPath = "/tbucket/dir/a%20b%20%C3%A9+%28x%29.txt"
			return r
		}},
		{name: "query added", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r := signedReq(t, "GET", obj, nil, spec(), nil)
			r.URL.RawQuery = "cachebust=1"
			return r
		}},
		{name: "signed header changed", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r := signedReq(t, "GET", obj, nil, spec(), func(r *http.Request) { r.Header.Set("Range", "bytes=0-5") })
			r.Header.Set("Range", "bytes=0-6")
			return r
		}},
		{name: "signed header removed", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r := signedReq(t, "GET", obj, nil, spec(), func(r *http.Request) { r.Header.Set("Range", "bytes=0-5") })
			r.Header.Del("Range")
			return r
		}},
		{name: "x-amz-date changed", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r := signedReq(t, "GET", obj, nil, spec(), nil)
			r.Header.Set("X-Amz-Date", tamperNow.Add(time.Second).Format(amzDateFormat))
			return r
		}},
		{name: "x-amz-date other day", status: 400, code: "AuthorizationHeaderMalformed", req: func(t *testing.T) *http.Request {
			r := signedReq(t, "GET", obj, nil, spec(), nil)
			r.Header.Set("X-Amz-Date", tamperNow.Add(-13*time.Hour).Format(amzDateFormat))
			return r
		}},
		{name: "wrong region", status: 400, code: "AuthorizationHeaderMalformed", req: func(t *testing.T) *http.Request {
			return signedReq(t, "GET", obj, nil, with(func(s *signSpec) { s.region = "us-west-2" }), nil)
		}},
		{name: "wrong secret", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			return signedReq(t, "GET", obj, nil, with(func(s *signSpec) { s.secret = "not-the-secret" }), nil)
		}},
		{name: "unknown access key", status: 403, code: "InvalidAccessKeyId", req: func(t *testing.T) *http.Request {
			return signedReq(t, "GET", obj, nil, with(func(s *signSpec) { s.akid = "AKIDUNKNOWN" }), nil)
		}},
		{name: "clock 20 min behind", status: 403, code: "RequestTimeTooSkewed", req: func(t *testing.T) *http.Request {
			return signedReq(t, "GET", obj, nil, with(func(s *signSpec) { s.at = tamperNow.Add(-20 * time.Minute) }), nil)
		}},
		{name: "clock 20 min ahead", status: 403, code: "RequestTimeTooSkewed", req: func(t *testing.T) *http.Request {
			return signedReq(t, "GET", obj, nil, with(func(s *signSpec) { s.at = tamperNow.Add(20 * time.Minute) }), nil)
		}},
		{name: "payload hash mismatch", status: 400, code: "XAmzContentSHA256Mismatch", req: func(t *testing.T) *http.Request {
			return signedReq(t, "PUT", base+"/tbucket/bad", []byte("abd"), with(func(s *signSpec) { s.hash = sha256Hex([]byte("abc")) }), nil)
		}},
		{name: "no x-amz-content-sha256", status: 400, code: "InvalidRequest", req: func(t *testing.T) *http.Request {
			return signedReq(t, "GET", obj, nil, with(func(s *signSpec) { s.noHashHeader = true }), nil)
		}},
		{name: "host not signed", status: 400, code: "AuthorizationHeaderMalformed", req: func(t *testing.T) *http.Request {
			r := signedReq(t, "GET", obj, nil, spec(), nil)
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "SignedHeaders=host;", "SignedHeaders=", 1))
			return r
		}},
		{name: "signature altered", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r := signedReq(t, "GET", obj, nil, spec(), nil)
			a := r.Header.Get("Authorization")
			r.Header.Set("Authorization", a[:len(a)-4]+"abcd")
			return r
		}},
		{name: "stream chunk altered", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r := minioStreaming(t, base+"/tbucket/s4", bigBody, false)
			raw, _ := io.ReadAll(r.Body)
			i := bytes.Index(raw, []byte("\r\n")) + 100
			raw[i] ^= 1
			r.Body = io.NopCloser(bytes.NewReader(raw))
			return r
		}},
		{name: "stream trailer altered", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r := minioStreaming(t, base+"/tbucket/s5", bigBody, true)
			raw, _ := io.ReadAll(r.Body)
			crc := crc32B64(bigBody)
			bad := crc32B64(append(bigBody, 1))
			raw = bytes.Replace(raw, []byte(crc), []byte(bad), 1)
			r.Body = io.NopCloser(bytes.NewReader(raw))
			return r
		}},
		{name: "trailer checksum wrong", status: 400, code: "BadDigest", req: func(t *testing.T) *http.Request {
			return unsignedTrailer(t, base+"/tbucket/s6", bigBody, crc32B64([]byte("other")), len(bigBody))
		}},
		{name: "decoded length wrong", status: 400, code: "IncompleteBody", req: func(t *testing.T) *http.Request {
			return unsignedTrailer(t, base+"/tbucket/s7", bigBody, crc32B64(bigBody), len(bigBody)-1)
		}},
		{name: "presign expired", status: 403, code: "AccessDenied", req: func(t *testing.T) *http.Request {
			u := presignedURL(t, "GET", obj, "60", with(func(s *signSpec) { s.at = tamperNow.Add(-2 * time.Minute) }))
			r, _ := http.NewRequest("GET", u, nil)
			return r
		}},
		{name: "presign query added", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r, _ := http.NewRequest("GET", presignedURL(t, "GET", obj, "300", spec())+"&response-content-type=text%2Fhtml", nil)
			return r
		}},
		{name: "presign method changed", status: 403, code: "SignatureDoesNotMatch", req: func(t *testing.T) *http.Request {
			r, _ := http.NewRequest("HEAD", presignedURL(t, "GET", obj, "300", spec()), nil)
			return r
		}},
		{name: "presign expires too long", status: 400, code: "AuthorizationQueryParametersError", req: func(t *testing.T) *http.Request {
			r, _ := http.NewRequest("GET", presignedURL(t, "GET", obj, "604801", spec()), nil)
			return r
		}},
		{name: "presign wrong region", status: 400, code: "AuthorizationQueryParametersError", req: func(t *testing.T) *http.Request {
			r, _ := http.NewRequest("GET", presignedURL(t, "GET", obj, "300", with(func(s *signSpec) { s.region = "us-east-1" })), nil)
			return r
		}},
	}
	var accepted, untampered, rejected, tampered int
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(c.req(t))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			note := notes(t, e, i+1)[i]
			if c.status == 0 {
				untampered++
				if resp.StatusCode/100 != 2 {
					t.Fatalf("not accepted: %d %s", resp.StatusCode, body)
				}
				if !strings.Contains(note, "sigv4: ok ("+testAKID) {
					t.Errorf("journal: %s", note)
				}
				accepted++
				return
			}
			tampered++
			if resp.StatusCode/100 == 2 {
				t.Fatalf("tampered request accepted: %d", resp.StatusCode)
			}
			rejected++
			if resp.StatusCode != c.status || (c.status != 0 && c.name != "presign method changed" && !bytes.Contains(body, []byte("<Code>"+c.code+"</Code>"))) {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, body, c.status, c.code)
			}
			if !strings.Contains(note, c.code) {
				t.Errorf("journal note %q lacks %s", note, c.code)
			}
			if c.code == "SignatureDoesNotMatch" && c.name != "presign method changed" && !strings.Contains(string(body), "<CanonicalRequest>") && !strings.Contains(c.name, "stream") {
				t.Errorf("no canonical request in %s", body)
			}
			if c.name == "path re-encoded" && !strings.Contains(string(body), "was re-encoded in transit") {
				t.Errorf("no re-encoding diagnosis in %s", body)
			}
			if c.code == "AuthorizationHeaderMalformed" && c.name == "wrong region" && !strings.Contains(string(body), "<Region>"+testRegion+"</Region>") {
				t.Errorf("no expected region in %s", body)
			}
		})
	}
	for _, k := range []string{"s1", "s2", "s3"} {
		if o, _ := srv.store.get("tbucket", k); o == nil || !bytes.Equal(content(t, srv, "tbucket", k), bigBody) || o.Header.Get("Content-Encoding") != "" {
			t.Errorf("streamed upload %s not stored as sent: %+v", k, o)
		}
	}
	for _, k := range []string{"bad", "s4", "s5", "s6", "s7"} {
		if o, _ := srv.store.get("tbucket", k); o != nil {
			t.Errorf("rejected upload %s was stored", k)
		}
	}
	t.Logf("untampered accepted %d/%d, tampered rejected %d/%d", accepted, untampered, rejected, tampered)
	if accepted != untampered || rejected != tampered {
		t.Errorf("untampered accepted %d/%d, tampered rejected %d/%d", accepted, untampered, rejected, tampered)
	}
}
