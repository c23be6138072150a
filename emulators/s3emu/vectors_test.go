package s3emu

import (
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// AWS's published SigV4 examples for S3 (Amazon S3 API Reference,
// "Signature Calculations for the Authorization Header" and "Query String
// Authentication").
const (
	vecAKID   = "AKIAIOSFODNN7EXAMPLE"
	vecSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	vecHost   = "examplebucket.s3.amazonaws.com"
)

var vecTime = time.Date(2013, 5, 24, 0, 0, 0, 0, time.UTC)

var vectors = []struct {
	name      string
	req       func() *http.Request
	canonical string
	sts       string
	signature string
}{
	{
		name: "GET object",
		req: func() *http.Request {
			r := httptest.NewRequest("GET", "http://"+vecHost+"/test.txt", nil)
			r.Header.Set("Range", "bytes=0-9")
			r.Header.Set("X-Amz-Content-Sha256", emptySHA256)
			r.Header.Set("X-Amz-Date", "20130524T000000Z")
			r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")
			return r
		},
		canonical: "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\nx-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\nx-amz-date:20130524T000000Z\n\nhost;range;x-amz-content-sha256;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		sts:       "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
		signature: "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
	},
	{
		name: "presigned GET",
		req: func() *http.Request {
			return httptest.NewRequest("GET", "http://"+vecHost+"/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404", nil)
		},
		canonical: "GET\n/test.txt\nX-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\nhost:examplebucket.s3.amazonaws.com\n\nhost\nUNSIGNED-PAYLOAD",
		sts:       "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n3bfa292879f6447bbcda7001decf97f4a54dc650c8942174ae0a9121cf58ad04",
		signature: "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
	},
}

func TestAWSVectors(t *testing.T) {
	srv, err := New(Config{
		Region: "us-east-1", HostSuffix: "s3.amazonaws.com",
		Credentials: map[string]string{vecAKID: vecSecret},
		Now:         func() time.Time { return vecTime.Add(time.Minute) },
		Buckets:     []BucketConfig{{Name: "examplebucket", Objects: []ObjectConfig{{Key: "test.txt", Body: "Welcome to Amazon S3."}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The documented signing key derivation.
	key := signingKey(vecSecret, "20130524", "us-east-1", "s3")
	if got := hex.EncodeToString(key); got != "dbb893acc010964918f1fd433add87c70e8b0db6be30c1fbeafefa5ec6ba8378" {
		t.Errorf("signing key %s", got)
	}
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			r := v.req()
			var sr signedRequest
			var perr *s3Error
			if r.Header.Get("Authorization") != "" {
				sr, perr = srv.verifier.parseHeader(r, r.Header.Get("Authorization"))
			} else {
				sr, perr = srv.verifier.parsePresigned(r.URL.Query())
			}
			if perr != nil {
				t.Fatalf("parse: %v", perr)
			}
			if got := canonicalRequest(r, sr); got != v.canonical {
				t.Errorf("canonical request:\n%s\nwant:\n%s", got, v.canonical)
			}
			sts := stringToSign(sr.AmzDate, sr.Cred.scope(), v.canonical)
			if sts != v.sts {
				t.Errorf("string to sign:\n%s\nwant:\n%s", sts, v.sts)
			}
			if got := hex.EncodeToString(hmacSHA256(key, sts)); got != v.signature {
				t.Errorf("signature %s, want %s", got, v.signature)
			}
			// And end to end through the handler.
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			want := http.StatusOK
			if r.Header.Get("Range") != "" {
				want = http.StatusPartialContent
			}
			if w.Code != want {
				t.Fatalf("status %d, want %d: %s", w.Code, want, w.Body)
			}
			if r.Header.Get("Range") != "" && w.Body.String() != "Welcome to" {
				t.Errorf("body %q", w.Body)
			}
			// One changed byte of the signature is rejected, and the
			// error shows the canonical request.
			r = v.req()
			if a := r.Header.Get("Authorization"); a != "" {
				r.Header.Set("Authorization", a[:len(a)-1]+"0")
			} else {
				r.URL.RawQuery = strings.Replace(r.URL.RawQuery, "d404", "d405", 1)
				r.RequestURI = r.URL.RequestURI()
			}
			w = httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "<Code>SignatureDoesNotMatch</Code>") ||
				!strings.Contains(w.Body.String(), "<CanonicalRequest>GET\n/test.txt\n") {
				t.Fatalf("tampered: %d %s", w.Code, w.Body)
			}
		})
	}
}
