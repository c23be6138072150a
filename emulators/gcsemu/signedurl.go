package gcsemu

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/journal"
)

// ServiceAccountKey is a service account whose V4 signed URLs
// (GOOG4-RSA-SHA256) are accepted.
type ServiceAccountKey struct {
	// ClientEmail is the account's id, the credential's first part.
	ClientEmail string `json:"clientEmail"`
	// KeyPEM is the account's public key, certificate or private key
	// (the private_key of its JSON key file), PEM-encoded.
	KeyPEM string `json:"keyPem"`
}

// maxSignedURLExpiry is Cloud Storage's longest X-Goog-Expires (7 days).
const maxSignedURLExpiry = 604800

type signedCtxKey struct{}

// signedBy reports the access id whose signed URL authorized r.
func signedBy(r *http.Request) (string, bool) {
	id, ok := r.Context().Value(signedCtxKey{}).(string)
	return id, ok
}

func parseSigningKey(p string) (*rsa.PublicKey, error) {
	block, _ := pem.Decode([]byte(p))
	if block == nil {
		return nil, fmt.Errorf("no PEM block")
	}
	switch block.Type {
	case "CERTIFICATE":
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		if k, ok := c.PublicKey.(*rsa.PublicKey); ok {
			return k, nil
		}
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		if rk, ok := k.(*rsa.PublicKey); ok {
			return rk, nil
		}
	case "RSA PRIVATE KEY":
		k, err := x509.ParsePKCS1PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		return &k.PublicKey, nil
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		if rk, ok := k.(*rsa.PrivateKey); ok {
			return &rk.PublicKey, nil
		}
	default:
		return nil, fmt.Errorf("PEM block %q is not a key or certificate", block.Type)
	}
	return nil, fmt.Errorf("not an RSA key")
}

func errSigned(status int, code, format string, args ...any) *apiError {
	return &apiError{status, code, map[int]string{400: "invalid", 403: "forbidden"}[status], fmt.Sprintf(format, args...)}
}

// verifySignedURL checks a V4 signed URL (X-Goog-Algorithm
// GOOG4-RSA-SHA256 or GOOG4-HMAC-SHA256) and returns the request with the
// signer's id in its context. Every error says what was wrong.
func (s *Server) verifySignedURL(r *http.Request) (*http.Request, error) {
	q := r.URL.Query()
	alg, cred, date := q.Get("X-Goog-Algorithm"), q.Get("X-Goog-Credential"), q.Get("X-Goog-Date")
	expires, signed, sig := q.Get("X-Goog-Expires"), q.Get("X-Goog-SignedHeaders"), q.Get("X-Goog-Signature")
	for name, v := range map[string]string{"X-Goog-Algorithm": alg, "X-Goog-Credential": cred, "X-Goog-Date": date, "X-Goog-Expires": expires, "X-Goog-SignedHeaders": signed} {
		if v == "" {
			return nil, errSigned(400, "InvalidArgument", "A signed URL needs %s", name)
		}
	}
	if alg != "GOOG4-RSA-SHA256" && alg != "GOOG4-HMAC-SHA256" {
		return nil, errSigned(400, "InvalidArgument", "X-Goog-Algorithm %q is not GOOG4-RSA-SHA256 or GOOG4-HMAC-SHA256", alg)
	}
	id, scope, ok := strings.Cut(cred, "/")
	sf := strings.Split(scope, "/")
	if !ok || len(sf) != 4 || sf[2] != "storage" || sf[3] != "goog4_request" {
		return nil, errSigned(400, "AuthorizationQueryParametersError", "X-Goog-Credential %q must be ID/DATE/LOCATION/storage/goog4_request", cred)
	}
	at, err := time.Parse("20060102T150405Z", date)
	if err != nil || sf[0] != date[:min(8, len(date))] {
		return nil, errSigned(400, "AuthorizationQueryParametersError", "X-Goog-Date %q must be YYYYMMDDTHHMMSSZ on the credential's date %s", date, sf[0])
	}
	exp, err := strconv.Atoi(expires)
	if err != nil || exp < 1 || exp > maxSignedURLExpiry {
		return nil, errSigned(400, "AuthorizationQueryParametersError", "X-Goog-Expires %q must be 1 to %d seconds", expires, maxSignedURLExpiry)
	}
	now := s.now()
	if now.After(at.Add(time.Duration(exp) * time.Second)) {
		return nil, errSigned(400, "ExpiredToken", "The provided token has expired. Request signature expired at: %s", at.Add(time.Duration(exp)*time.Second).Format(time.RFC3339))
	}
	if at.After(now.Add(15 * time.Minute)) {
		return nil, errSigned(400, "AuthorizationQueryParametersError", "X-Goog-Date %s is in the future", date)
	}
	want, err := hex.DecodeString(sig)
	if err != nil {
		return nil, errSigned(400, "InvalidArgument", "X-Goog-Signature is not hex")
	}
	// The Go client signs the host without its port; other signers keep
	// it: either is accepted.
	var tried []string
	for _, host := range hostForms(r.Host) {
		canonical := signedCanonicalRequest(r, signed, host)
		sum := sha256.Sum256([]byte(canonical))
		sts := alg + "\n" + date + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
		tried = append(tried, sts)
		ok, known := s.checkSignature(alg, id, sf, sts, want)
		if !known {
			return nil, errSigned(403, "InvalidAccessKeyId", "The access id %q of X-Goog-Credential is not configured (serviceAccounts for GOOG4-RSA-SHA256, hmacKeys for GOOG4-HMAC-SHA256)", id)
		}
		if ok {
			journal.Annotate(r.Context(), "gcs: signed URL ok ("+id+")")
			return r.WithContext(context.WithValue(r.Context(), signedCtxKey{}, id)), nil
		}
		if !strings.Contains(signed, "host") {
			break
		}
	}
	journal.Annotate(r.Context(), "gcs: signed URL: SignatureDoesNotMatch")
	return nil, errSigned(403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. StringToSign: %q", tried[0])
}

func hostForms(hostport string) []string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return []string{hostport, h}
	}
	return []string{hostport}
}

// checkSignature verifies sig over sts; known is false for an unknown id.
func (s *Server) checkSignature(alg, id string, scope []string, sts string, sig []byte) (ok, known bool) {
	if alg == "GOOG4-HMAC-SHA256" {
		secret, found := s.hmacKeys[id]
		if !found {
			return false, false
		}
		key := []byte("GOOG4" + secret)
		for _, part := range []string{scope[0], scope[1], "storage", "goog4_request"} {
			key = hmacSum(key, part)
		}
		return subtle.ConstantTimeCompare(hmacSum(key, sts), sig) == 1, true
	}
	pub, found := s.serviceAccounts[id]
	if !found {
		return false, false
	}
	sum := sha256.Sum256([]byte(sts))
	return rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) == nil, true
}

func hmacSum(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// signedCanonicalRequest is the V4 canonical request of r: method, path,
// query without X-Goog-Signature, the signed headers, UNSIGNED-PAYLOAD (or
// x-goog-content-sha256).
func signedCanonicalRequest(r *http.Request, signedHeaders, host string) string {
	var b strings.Builder
	b.WriteString(r.Method + "\n")
	b.WriteString(uriEncode(r.URL.Path, false) + "\n")
	type kv struct{ k, v string }
	var params []kv
	for k, vs := range r.URL.Query() {
		if k == "X-Goog-Signature" {
			continue
		}
		for _, v := range vs {
			params = append(params, kv{uriEncode(k, true), uriEncode(v, true)})
		}
	}
	sort.Slice(params, func(i, j int) bool {
		if params[i].k != params[j].k {
			return params[i].k < params[j].k
		}
		return params[i].v < params[j].v
	})
	for i, p := range params {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k + "=" + p.v)
	}
	b.WriteByte('\n')
	for _, h := range strings.Split(signedHeaders, ";") {
		v := strings.Join(r.Header.Values(h), ",")
		if h == "host" {
			v = host
		}
		b.WriteString(h + ":" + strings.Join(strings.Fields(v), " ") + "\n")
	}
	b.WriteString("\n" + signedHeaders + "\n")
	if v := r.Header.Get("X-Goog-Content-Sha256"); v != "" {
		b.WriteString(v)
	} else {
		b.WriteString("UNSIGNED-PAYLOAD")
	}
	return b.String()
}

// uriEncode percent-encodes all but the unreserved characters (and "/"
// unless encodeSlash), as V4 signing does.
func uriEncode(s string, encodeSlash bool) string {
	return strings.NewReplacer("+", "%20", "%7E", "~").Replace(escapeAll(s, encodeSlash))
}

func escapeAll(s string, encodeSlash bool) string {
	if encodeSlash {
		return url.QueryEscape(s)
	}
	parts := strings.Split(s, "/")
	for i, p := range parts {
		parts[i] = url.QueryEscape(p)
	}
	return strings.Join(parts, "/")
}
