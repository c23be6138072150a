package gcsemu

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"net/http"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
)

const saEmail = "cdn-signer@test-project.iam.gserviceaccount.com"

// V4 signed URLs made by cloud.google.com/go/storage (GOOG4-RSA-SHA256
// with a service account key) read a private object and upload one; a
// changed URL, an unknown account, an expired URL and an HMAC signature by
// a wrong secret are refused with errors saying so.
func TestSignedURLs(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	cfg := testConfig()
	cfg.ServiceAccounts = []ServiceAccountKey{{ClientEmail: saEmail, KeyPEM: string(pemKey)}}
	cfg.HMACKeys = map[string]string{"GOOGHMACKEY1": "hmac-secret"}
	_, url := newTestServer(t, cfg)
	host := strings.TrimPrefix(url, "http://")
	sign := func(method, object string, expires time.Duration, email string) string {
		u, err := storage.SignedURL(privBucket, object, &storage.SignedURLOptions{GoogleAccessID: email, PrivateKey: pemKey, Method: method,
			Expires: time.Now().Add(expires), Scheme: storage.SigningSchemeV4, Insecure: true, Hostname: host, Style: storage.PathStyle()})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	do := func(method, u, body string) (int, string) {
		req, _ := http.NewRequest(method, u, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := new(strings.Builder)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		return resp.StatusCode, b.String()
	}
	if code, body := do("GET", sign("GET", "secret.txt", time.Hour, saEmail), ""); code != 200 || body != "top secret" {
		t.Fatalf("signed GET of a private object: %d %q", code, body)
	}
	if code, body := do("PUT", sign("PUT", "uploaded/via signed.txt", time.Hour, saEmail), "signed upload"); code != 200 {
		t.Fatalf("signed PUT: %d %s", code, body)
	}
	if code, body := do("GET", sign("GET", "uploaded/via signed.txt", time.Hour, saEmail), ""); code != 200 || body != "signed upload" {
		t.Fatalf("reading the signed upload: %d %q", code, body)
	}
	changed := strings.Replace(sign("GET", "secret.txt", time.Hour, saEmail), "secret.txt", "hello.txt", 1)
	if code, body := do("GET", changed, ""); code != 403 || !strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") || !strings.Contains(body, "StringToSign") {
		t.Errorf("changed path: %d %s", code, body)
	}
	if code, body := do("GET", sign("GET", "secret.txt", time.Hour, "other@x.iam.gserviceaccount.com"), ""); code != 403 || !strings.Contains(body, "InvalidAccessKeyId") {
		t.Errorf("unknown account: %d %s", code, body)
	}
	// An expired URL: valid for a minute, used by a server whose clock is
	// two hours ahead.
	late := cfg
	late.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	_, lateURL := newTestServer(t, late)
	u := strings.Replace(sign("GET", "secret.txt", time.Minute, saEmail), url, lateURL, 1)
	lateHost := strings.TrimPrefix(lateURL, "http://")
	u = strings.Replace(u, host, lateHost, 1)
	if code, body := do("GET", u, ""); code != 400 || !strings.Contains(body, "ExpiredToken") {
		t.Errorf("expired: %d %s", code, body)
	}
	// GOOG4-HMAC-SHA256, signed as Cloud Storage documents it.
	hm := func(secret string) string {
		now := time.Now().UTC()
		date, day := now.Format("20060102T150405Z"), now.Format("20060102")
		scope := day + "/auto/storage/goog4_request"
		q := neturl.Values{"X-Goog-Algorithm": {"GOOG4-HMAC-SHA256"}, "X-Goog-Credential": {"GOOGHMACKEY1/" + scope},
			"X-Goog-Date": {date}, "X-Goog-Expires": {"600"}, "X-Goog-SignedHeaders": {"host"}}
		query := strings.ReplaceAll(q.Encode(), "+", "%20")
		canonical := "GET\n/" + privBucket + "/secret.txt\n" + query + "\nhost:" + host + "\n\nhost\nUNSIGNED-PAYLOAD"
		sum := sha256.Sum256([]byte(canonical))
		sts := "GOOG4-HMAC-SHA256\n" + date + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
		k := []byte("GOOG4" + secret)
		for _, p := range []string{day, "auto", "storage", "goog4_request", sts} {
			m := hmac.New(sha256.New, k)
			m.Write([]byte(p))
			k = m.Sum(nil)
		}
		return url + "/" + privBucket + "/secret.txt?" + query + "&X-Goog-Signature=" + hex.EncodeToString(k)
	}
	if code, body := do("GET", hm("hmac-secret"), ""); code != 200 || body != "top secret" {
		t.Errorf("HMAC signed GET: %d %s", code, body)
	}
	if code, body := do("GET", hm("wrong-secret"), ""); code != 403 || !strings.Contains(body, "SignatureDoesNotMatch") {
		t.Errorf("HMAC with a wrong secret: %d %s", code, body)
	}
}
