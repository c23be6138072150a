package fetch

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/edgeconform/edgeconform/emulators/journal"
)

// sigV4Verifier is a minimal S3-like origin for tests: it verifies the
// request's AWS SigV4 Authorization header by rebuilding the request from
// the headers it names as signed (and nothing else) and signing it again
// with the secret of the access key, then answers 200, or 403 with the
// reason. Paths shape the answer: /fail-once/ answers 503 the first time,
// /fail/ always 503, /redirect/ a 302 to Location "redirect" + the path's
// rest (set Redirect).
type sigV4Verifier struct {
	Keys   map[string]string // access key id -> secret
	Region string
	// WantHost, if set, is the only Host served (an S3 bucket's virtual
	// host): another Host gets 403 even when the signature matches it.
	WantHost string
	Redirect string // base URL for /redirect/

	mu   sync.Mutex
	seen map[string]int
}

func (v *sigV4Verifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := v.verify(r); err != nil {
		journal.Annotate(r.Context(), "rejected: "+err.Error())
		http.Error(w, "SignatureDoesNotMatch: "+err.Error(), http.StatusForbidden)
		return
	}
	journal.Annotate(r.Context(), "signature ok")
	v.mu.Lock()
	if v.seen == nil {
		v.seen = map[string]int{}
	}
	v.seen[r.URL.Path]++
	n := v.seen[r.URL.Path]
	v.mu.Unlock()
	switch {
	case strings.HasPrefix(r.URL.Path, "/fail-once/") && n == 1, strings.HasPrefix(r.URL.Path, "/fail/"):
		http.Error(w, "SlowDown", http.StatusServiceUnavailable)
		return
	case strings.HasPrefix(r.URL.Path, "/redirect/"):
		w.Header().Set("Location", v.Redirect+strings.TrimPrefix(r.URL.Path, "/redirect"))
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("Cache-Control", "max-age=60")
	w.Header().Set("Content-Type", "text/plain")
	if r.Method != http.MethodHead {
		io.WriteString(w, "object "+r.URL.Path)
	}
}

// verify checks r's signature.
func (v *sigV4Verifier) verify(r *http.Request) error {
	if v.WantHost != "" && !strings.EqualFold(r.Host, v.WantHost) {
		return fmt.Errorf("host %q is not the bucket's %q", r.Host, v.WantHost)
	}
	auth := r.Header.Get("Authorization")
	rest, ok := strings.CutPrefix(auth, "AWS4-HMAC-SHA256 ")
	if !ok {
		return fmt.Errorf("no AWS4-HMAC-SHA256 Authorization (%q)", auth)
	}
	fields := map[string]string{}
	for _, part := range strings.Split(rest, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = val
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" || scope[3] != "s3" {
		return fmt.Errorf("bad credential %q", fields["Credential"])
	}
	secret, ok := v.Keys[scope[0]]
	if !ok {
		return fmt.Errorf("unknown access key %q", scope[0])
	}
	if scope[2] != v.Region {
		return fmt.Errorf("region %q, want %q", scope[2], v.Region)
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("x-amz-date: %v", err)
	}
	if scope[1] != at.Format("20060102") {
		return fmt.Errorf("credential date %q is not x-amz-date's", scope[1])
	}
	if d := time.Since(at); d > 15*time.Minute || d < -15*time.Minute {
		return fmt.Errorf("x-amz-date %v is too far from now", at)
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return fmt.Errorf("no x-amz-content-sha256")
	}
	signed := strings.Split(fields["SignedHeaders"], ";")
	re := &http.Request{Method: r.Method, Host: r.Host, Header: http.Header{},
		URL: &url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}}
	for _, h := range signed {
		if h == "host" {
			continue
		}
		vals := r.Header.Values(h)
		if len(vals) == 0 {
			return fmt.Errorf("signed header %q missing", h)
		}
		re.Header[http.CanonicalHeaderKey(h)] = vals
	}
	creds := aws.Credentials{AccessKeyID: scope[0], SecretAccessKey: secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, re, payload, "s3", v.Region, at,
		func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }); err != nil {
		return err
	}
	if got, want := auth, re.Header.Get("Authorization"); got != want {
		return fmt.Errorf("signature mismatch for host %q: got %q, want %q", r.Host, got, want)
	}
	return nil
}
