package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// Bucket origins (behaviour.md BKT, HST-4).
//
// awsV4Authentication (BKT-1, BKT-2): every request to such an origin is
// signed with AWS Signature Version 4 for service "s3" and the origin's
// region, with its accessKeyId and resolved secret. Each attempt (a retry,
// a failover, a followed redirect) is signed afresh, just before it is
// sent, on its own Host and time. The signature covers exactly host,
// x-amz-content-sha256 (UNSIGNED-PAYLOAD) and x-amz-date: the other headers
// (User-Agent and the rest of the client's) are sent unsigned, so that
// they may change without breaking the signature. Interpretations (INT):
//
//   - The canonical host is the Host header exactly as sent, port
//     included (a hostRewrite "b.s3.example:8443" is signed as such). The
//     Host follows HST-1, so a virtual-hosted bucket host other than the
//     client's Host needs a hostRewrite (BKT-3).
//   - The client's own Authorization and X-Amz-* headers are not sent to a
//     signed origin: S3 rejects unsigned x-amz-* headers, and a client must
//     not choose e.g. x-amz-security-token for the edge.
//   - Only GET, HEAD and OPTIONS are signed (BKT-1); any other method to a
//     signed origin is answered 502 (proxy_configuration_error) without an
//     origin request.
//
// gs:// origins (BKT-4, HST-4) reach a Cloud Storage XML API endpoint:
// GCS.Endpoint, by default https://storage.googleapis.com. Any hostRewrite
// is ignored. The Host (and SNI) is the virtual-hosted
// BUCKET.<endpoint host>, dialled at the endpoint's host; when the endpoint
// host is an IP address or "localhost", or the bucket name has dots (which
// the endpoint's wildcard certificate cannot cover), the request is
// path-style instead: Host the endpoint's host, path /BUCKET/OBJECT. An
// http:// endpoint is reached over cleartext HTTP; an https:// one with the
// origin's protocol (HTTPS or HTTP2; HTTPS if it says HTTP). With
// GCS.Token the requests carry Authorization: Bearer TOKEN (a private
// bucket read with the service's credentials), unless the origin signs with
// awsV4Authentication; the token is sent only to the bucket's own target,
// never to a redirect's other host. The bucket's Cache-Control reaches the
// cache unchanged, which follows it like any origin's (BKT-5; under
// FORCE_CACHE_ALL it is ignored, as package policy says).

// DefaultGCSEndpoint is where gs:// origins go by default.
const DefaultGCSEndpoint = "https://storage.googleapis.com"

// GCS says how gs:// origins are reached.
type GCS struct {
	// Endpoint is the XML API's base URL (scheme and host[:port] only);
	// nil means DefaultGCSEndpoint.
	Endpoint *url.URL
	// Token, if set, returns the bearer token for gs:// origin requests.
	Token func() (string, error)
}

// Option configures an Engine.
type Option func(*Engine)

// WithGCS sets how gs:// origins are reached.
func WithGCS(g GCS) Option { return func(e *Engine) { e.gcs = g } }

// ParseGCSEndpoint parses a GCS endpoint URL: http or https, a host, an
// optional port, no path beyond "/", no query.
func ParseGCSEndpoint(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q: want an http:// or https:// URL", s)
	case u.Hostname() == "":
		return nil, fmt.Errorf("%q: no host", s)
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "", u.User != nil:
		return nil, fmt.Errorf("%q: want scheme://host[:port] only", s)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("%q: bad port", s)
		}
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

var defaultGCSEndpoint, _ = ParseGCSEndpoint(DefaultGCSEndpoint)

// bucketOf returns the bucket of a gs:// origin address.
func bucketOf(address string) (string, bool) { return strings.CutPrefix(address, "gs://") }

// gcsTarget is where a gs:// origin's requests go, and the path for
// pathAndQuery (HST-4: no hostRewrite).
func (e *Engine) gcsTarget(o config.EffectiveOrigin, bucket, pathAndQuery string) (upstream.Target, string) {
	ep := e.gcs.Endpoint
	if ep == nil {
		ep = defaultGCSEndpoint
	}
	protocol := config.ProtocolHTTP
	if ep.Scheme == "https" {
		protocol = o.Protocol
		if protocol != config.ProtocolHTTP2 {
			protocol = config.ProtocolHTTPS
		}
	}
	port := upstream.DefaultPort(protocol)
	if p := ep.Port(); p != "" {
		port, _ = strconv.Atoi(p)
	}
	name := strings.ToLower(ep.Hostname())
	hostPort := name
	if strings.Contains(name, ":") {
		hostPort = "[" + name + "]"
	}
	if port != upstream.DefaultPort(protocol) {
		hostPort = net.JoinHostPort(name, strconv.Itoa(port))
	}
	t := upstream.Target{Protocol: protocol, Address: name, Port: port, Host: hostPort}
	if net.ParseIP(name) != nil || name == "localhost" || strings.Contains(bucket, ".") {
		// Path-style.
		if strings.HasPrefix(pathAndQuery, "/") {
			return t, "/" + bucket + pathAndQuery
		}
		return t, "/" + bucket + "/" + pathAndQuery
	}
	t.Host = bucket + "." + hostPort // virtual-hosted
	return t, pathAndQuery
}

// errUnsignedMethod: BKT-1 signs only GET, HEAD and OPTIONS.
var errUnsignedMethod = errors.New("awsV4Authentication origins take only GET, HEAD and OPTIONS")

// unsignedPayload is x-amz-content-sha256 for a body outside the signature.
const unsignedPayload = "UNSIGNED-PAYLOAD"

// authorize adds the attempt's credentials to r, sent to t: a SigV4
// signature for an awsV4Authentication origin, or the bearer token for a
// gs:// origin's own target.
func (f *fetch) authorize(r *http.Request, o config.EffectiveOrigin, t upstream.Target) error {
	if o.AWSV4 != nil {
		return signV4(r.Context(), r, o, t.HostHeader(), f.e.now())
	}
	if f.e.gcs.Token != nil && t == f.bucketTarget && f.bucketTarget != (upstream.Target{}) {
		tok, err := f.e.gcs.Token()
		if err != nil {
			return fmt.Errorf("gcs token: %w", err)
		}
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	return nil
}

// signV4 signs r for host at now (BKT-1, BKT-2): a request with only host,
// x-amz-date and x-amz-content-sha256 is signed, and its Authorization,
// X-Amz-Date and X-Amz-Content-Sha256 are copied to r.
func signV4(ctx context.Context, r *http.Request, o config.EffectiveOrigin, host string, now time.Time) error {
	if !safeMethod(r.Method) {
		return errUnsignedMethod
	}
	for name := range r.Header {
		if strings.HasPrefix(strings.ToLower(name), "x-amz-") {
			delete(r.Header, name)
		}
	}
	r.Header.Del("Authorization")
	u := *r.URL
	u.Scheme, u.Host = "", "" // no scheme: the signer keeps any port in host
	sr := &http.Request{Method: r.Method, URL: &u, Host: host, Header: http.Header{}}
	sr.Header.Set("X-Amz-Content-Sha256", unsignedPayload)
	creds := aws.Credentials{AccessKeyID: o.AWSV4.AccessKeyID, SecretAccessKey: o.AWSV4Secret}
	// A signer per signature: the SDK's signers cache the derived key by
	// access key, region and day, not by secret, so a shared one would
	// keep signing with an old secret for a key seen before.
	err := v4.NewSigner().SignHTTP(ctx, creds, sr, unsignedPayload, "s3", o.AWSV4.OriginRegion, now.UTC(),
		func(so *v4.SignerOptions) { so.DisableURIPathEscaping = true }) // S3 does not double-escape
	if err != nil {
		return fmt.Errorf("signing: %w", err)
	}
	for _, name := range []string{"Authorization", "X-Amz-Date", "X-Amz-Content-Sha256"} {
		r.Header.Set(name, sr.Header.Get(name))
	}
	// The signer signs the query in its canonical form ('+' read as a
	// space, re-encoded as %20) and rewrites RawQuery to it: send exactly
	// what was signed, so no origin can read the query differently.
	r.URL.RawQuery = sr.URL.RawQuery
	return nil
}
