package s3emu

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SigV4 constants.
const (
	sigAlgorithm       = "AWS4-HMAC-SHA256"
	amzDateFormat      = "20060102T150405Z"
	scopeDateFormat    = "20060102"
	scopeTerminator    = "aws4_request"
	serviceName        = "s3"
	unsignedPayload    = "UNSIGNED-PAYLOAD"
	streamingSigned    = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingSignedTr  = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	streamingUnsigned  = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	emptySHA256        = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	maxPresignExpires  = 604800
	presignSignatureQP = "X-Amz-Signature"
)

// auth is who sent a request, once verified.
type auth struct {
	Anonymous   bool
	Presigned   bool
	AccessKey   string
	AmzDate     string // as signed, YYYYMMDDTHHMMSSZ
	Scope       string // date/region/s3/aws4_request
	SigningKey  []byte
	Signature   string // the request's (seed) signature
	PayloadHash string // as declared: hex, UNSIGNED-PAYLOAD or STREAMING-*
}

// verifier checks SigV4 signatures.
type verifier struct {
	region  string
	creds   map[string]string
	now     func() time.Time
	maxSkew time.Duration
}

// credential is a parsed credential scope.
type credential struct {
	AccessKey, Date, Region, Service, Terminator string
}

func (c credential) scope() string {
	return c.Date + "/" + c.Region + "/" + c.Service + "/" + c.Terminator
}

func parseCredential(s string) (credential, bool) {
	p := strings.Split(s, "/")
	if len(p) != 5 || p[0] == "" {
		return credential{}, false
	}
	return credential{p[0], p[1], p[2], p[3], p[4]}, true
}

// signedRequest is what a request claims about its signature.
type signedRequest struct {
	Presigned     bool
	Cred          credential
	SignedHeaders string
	Signature     string
	AmzDate       string
	PayloadHash   string
	Expires       int64 // presigned only
}

// verify authenticates r. A request with neither an Authorization header
// nor X-Amz-Algorithm/X-Amz-Signature in its query is anonymous.
func (v *verifier) verify(r *http.Request) (*auth, *s3Error) {
	authz := r.Header.Get("Authorization")
	q := r.URL.Query()
	presigned := q.Has("X-Amz-Algorithm") || q.Has("X-Amz-Signature") || q.Has("X-Amz-Credential")
	switch {
	case authz != "" && presigned:
		return nil, newErr(http.StatusBadRequest, "InvalidArgument", "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified")
	case authz == "" && !presigned:
		if q.Has("Signature") || q.Has("AWSAccessKeyId") {
			return nil, newErr(http.StatusBadRequest, "InvalidRequest", "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.")
		}
		return &auth{Anonymous: true}, nil
	}
	var sr signedRequest
	var err *s3Error
	if presigned {
		sr, err = v.parsePresigned(q)
	} else {
		sr, err = v.parseHeader(r, authz)
	}
	if err != nil {
		return nil, err
	}
	return v.check(r, sr)
}

// parseHeader reads an Authorization header:
// AWS4-HMAC-SHA256 Credential=AKID/DATE/REGION/s3/aws4_request, SignedHeaders=a;b, Signature=hex
func (v *verifier) parseHeader(r *http.Request, authz string) (signedRequest, *s3Error) {
	var sr signedRequest
	alg, rest, _ := strings.Cut(strings.TrimSpace(authz), " ")
	if alg != sigAlgorithm {
		if alg == "AWS" {
			return sr, newErr(http.StatusBadRequest, "InvalidRequest", "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.")
		}
		return sr, errMalformedHeader("the authorization mechanism %q is not supported; expecting %q.", alg, sigAlgorithm)
	}
	var cred string
	var haveCred, haveSH, haveSig bool
	for _, part := range strings.Split(rest, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return sr, errMalformedHeader("the authorization component %q is malformed.", strings.TrimSpace(part))
		}
		switch k {
		case "Credential":
			cred, haveCred = val, true
		case "SignedHeaders":
			sr.SignedHeaders, haveSH = val, true
		case "Signature":
			sr.Signature, haveSig = val, true
		default:
			return sr, errMalformedHeader("the authorization component %q is not recognised.", k)
		}
	}
	switch {
	case !haveCred:
		return sr, errMalformedHeader("missing Credential.")
	case !haveSH:
		return sr, errMalformedHeader("missing SignedHeaders.")
	case !haveSig:
		return sr, errMalformedHeader("missing Signature.")
	}
	c, ok := parseCredential(cred)
	if !ok {
		return sr, errMalformedHeader("the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".")
	}
	sr.Cred = c
	if err := v.checkScope(c, false); err != nil {
		return sr, err
	}
	sr.AmzDate = r.Header.Get("X-Amz-Date")
	if sr.AmzDate == "" {
		// S3 falls back to the Date header, in HTTP date format.
		d := r.Header.Get("Date")
		if d == "" {
			return sr, newErr(http.StatusForbidden, "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header")
		}
		t, err := http.ParseTime(d)
		if err != nil {
			return sr, newErr(http.StatusForbidden, "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header")
		}
		sr.AmzDate = t.UTC().Format(amzDateFormat)
	}
	sr.PayloadHash = r.Header.Get("X-Amz-Content-Sha256")
	if sr.PayloadHash == "" {
		return sr, newErr(http.StatusBadRequest, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
	}
	if !validPayloadHash(sr.PayloadHash) {
		return sr, newErr(http.StatusBadRequest, "InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.").with("ArgumentName", "x-amz-content-sha256").with("ArgumentValue", sr.PayloadHash)
	}
	return sr, nil
}

func validPayloadHash(h string) bool {
	switch h {
	case unsignedPayload, streamingSigned, streamingSignedTr, streamingUnsigned:
		return true
	}
	return isHexSHA256(h)
}

func isHexSHA256(h string) bool {
	if len(h) != 64 {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil
}

// parsePresigned reads the X-Amz-* query parameters of a presigned URL.
func (v *verifier) parsePresigned(q url.Values) (signedRequest, *s3Error) {
	sr := signedRequest{Presigned: true}
	for _, p := range []string{"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Expires"} {
		if !q.Has(p) {
			return sr, errMalformedQuery("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		}
	}
	if alg := q.Get("X-Amz-Algorithm"); alg != sigAlgorithm {
		return sr, errMalformedQuery("X-Amz-Algorithm only supports \"%s\"", sigAlgorithm)
	}
	c, ok := parseCredential(q.Get("X-Amz-Credential"))
	if !ok {
		return sr, errMalformedQuery("Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".")
	}
	sr.Cred = c
	if err := v.checkScope(c, true); err != nil {
		return sr, err
	}
	sr.AmzDate = q.Get("X-Amz-Date")
	exp, err := strconv.ParseInt(q.Get("X-Amz-Expires"), 10, 64)
	switch {
	case err != nil:
		return sr, errMalformedQuery("X-Amz-Expires should be a number")
	case exp < 0:
		return sr, errMalformedQuery("X-Amz-Expires must be non-negative")
	case exp > maxPresignExpires:
		return sr, errMalformedQuery("X-Amz-Expires must be less than a week (in seconds) that is 604800")
	}
	sr.Expires = exp
	sr.SignedHeaders = q.Get("X-Amz-SignedHeaders")
	sr.Signature = q.Get(presignSignatureQP)
	sr.PayloadHash = unsignedPayload
	if h := q.Get("X-Amz-Content-Sha256"); h != "" {
		sr.PayloadHash = h
	}
	return sr, nil
}

// checkScope checks the region, service and terminator of a credential.
func (v *verifier) checkScope(c credential, presigned bool) *s3Error {
	bad := errMalformedHeader
	prefix := ""
	if presigned {
		bad = errMalformedQuery
		prefix = "Error parsing the X-Amz-Credential parameter; "
	}
	switch {
	case c.Region != v.region:
		return bad(prefix+"the region '%s' is wrong; expecting '%s'", c.Region, v.region).with("Region", v.region)
	case c.Service != serviceName:
		return bad(prefix+"incorrect service \"%s\". This endpoint belongs to \"%s\".", c.Service, serviceName)
	case c.Terminator != scopeTerminator:
		return bad(prefix+"incorrect terminal \"%s\". This endpoint uses \"%s\".", c.Terminator, scopeTerminator)
	}
	return nil
}

// check verifies the dates, the key and the signature of a parsed request.
func (v *verifier) check(r *http.Request, sr signedRequest) (*auth, *s3Error) {
	bad := errMalformedHeader
	if sr.Presigned {
		bad = errMalformedQuery
	}
	t, err := time.Parse(amzDateFormat, sr.AmzDate)
	if err != nil {
		if sr.Presigned {
			return nil, errMalformedQuery("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
		}
		return nil, newErr(http.StatusForbidden, "AccessDenied", "AWS authentication requires a valid Date or x-amz-date header")
	}
	if t.Format(scopeDateFormat) != sr.Cred.Date {
		if sr.Presigned {
			return nil, bad("Invalid date format of X-Amz-Credential: %s does not match X-Amz-Date %s", sr.Cred.Date, sr.AmzDate)
		}
		return nil, bad("Invalid credential date \"%s\". This date is not the same as X-Amz-Date: \"%s\".", sr.Cred.Date, t.Format(scopeDateFormat))
	}
	secret, ok := v.creds[sr.Cred.AccessKey]
	if !ok {
		return nil, newErr(http.StatusForbidden, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.").with("AWSAccessKeyId", sr.Cred.AccessKey)
	}
	now := v.now().UTC()
	if sr.Presigned {
		if t.Sub(now) > v.maxSkew {
			return nil, newErr(http.StatusForbidden, "AccessDenied", "Request is not valid yet").
				with("X-Amz-Date", sr.AmzDate).with("ServerTime", now.Format(time.RFC3339))
		}
		if exp := t.Add(time.Duration(sr.Expires) * time.Second); now.After(exp) {
			return nil, newErr(http.StatusForbidden, "AccessDenied", "Request has expired").
				with("X-Amz-Expires", strconv.FormatInt(sr.Expires, 10)).
				with("Expires", exp.Format(time.RFC3339)).with("ServerTime", now.Format(time.RFC3339))
		}
	} else if d := now.Sub(t); d > v.maxSkew || d < -v.maxSkew {
		return nil, newErr(http.StatusForbidden, "RequestTimeTooSkewed", "The difference between the request time and the current time is too large.").
			with("RequestTime", sr.AmzDate).with("ServerTime", now.Format(time.RFC3339)).
			with("MaxAllowedSkewMilliseconds", strconv.FormatInt(v.maxSkew.Milliseconds(), 10))
	}
	if !containsHeader(sr.SignedHeaders, "host") {
		if sr.Presigned {
			return nil, errMalformedQuery("X-Amz-SignedHeaders must include host: %q", sr.SignedHeaders)
		}
		return nil, errMalformedHeader("SignedHeaders must include host: %q", sr.SignedHeaders)
	}
	canonical := canonicalRequest(r, sr)
	key := signingKey(secret, sr.Cred.Date, sr.Cred.Region, sr.Cred.Service)
	sts := stringToSign(sr.AmzDate, sr.Cred.scope(), canonical)
	want := hex.EncodeToString(hmacSHA256(key, sts))
	if subtle.ConstantTimeCompare([]byte(want), []byte(strings.ToLower(sr.Signature))) != 1 {
		e := signatureMismatch(r, sr, canonical, sts)
		if hint := diagnose(r, sr, key); hint != "" {
			e.Message += " (" + hint + ")"
		}
		return nil, e
	}
	return &auth{
		Presigned: sr.Presigned, AccessKey: sr.Cred.AccessKey, AmzDate: sr.AmzDate,
		Scope: sr.Cred.scope(), SigningKey: key, Signature: want, PayloadHash: sr.PayloadHash,
	}, nil
}

// signatureMismatch is S3's SignatureDoesNotMatch, with what the server
// signed, and a hint naming signed headers the request lacks.
func signatureMismatch(r *http.Request, sr signedRequest, canonical, sts string) *s3Error {
	msg := "The request signature we calculated does not match the signature you provided. Check your key and signing method."
	var missing []string
	for _, h := range strings.Split(sr.SignedHeaders, ";") {
		if h != "host" && len(headerValues(r, h)) == 0 {
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		msg += fmt.Sprintf(" (signed headers missing from the request: %s)", strings.Join(missing, ", "))
	}
	return newErr(http.StatusForbidden, "SignatureDoesNotMatch", "%s", msg).
		with("AWSAccessKeyId", sr.Cred.AccessKey).
		with("StringToSign", sts).
		with("SignatureProvided", sr.Signature).
		with("StringToSignBytes", spacedHex(sts)).
		with("CanonicalRequest", canonical).
		with("CanonicalRequestBytes", spacedHex(canonical))
}

func spacedHex(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%02x", s[i])
	}
	return b.String()
}

func containsHeader(signedHeaders, name string) bool {
	for _, h := range strings.Split(signedHeaders, ";") {
		if h == name {
			return true
		}
	}
	return false
}

// canonicalRequest builds the SigV4 canonical request S3 computes:
// method, the path as sent (S3 does not encode it again), the sorted
// query (without X-Amz-Signature when presigned), the signed headers'
// canonical values, the signed header list and the payload hash.
func canonicalRequest(r *http.Request, sr signedRequest) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(canonicalURI(r))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(r.URL.RawQuery, sr.Presigned))
	b.WriteByte('\n')
	for _, h := range strings.Split(sr.SignedHeaders, ";") {
		b.WriteString(h)
		b.WriteByte(':')
		b.WriteString(canonicalHeaderValue(r, h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(sr.SignedHeaders)
	b.WriteByte('\n')
	b.WriteString(sr.PayloadHash)
	return b.String()
}

// canonicalURI is the request's path exactly as it was sent.
func canonicalURI(r *http.Request) string {
	p := r.RequestURI
	if p == "" || p == "*" {
		p = r.URL.EscapedPath()
	} else {
		if i := strings.IndexByte(p, '?'); i >= 0 {
			p = p[:i]
		}
		if !strings.HasPrefix(p, "/") {
			// absolute form: scheme://host/path
			if u, err := url.Parse(p); err == nil {
				p = u.EscapedPath()
			}
		}
	}
	if p == "" {
		return "/"
	}
	return p
}

// canonicalQuery sorts the query's parameters by their URI-encoded names
// and values.
func canonicalQuery(raw string, presigned bool) string {
	type kv struct{ k, v string }
	var params []kv
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		k, v = uriEncode(unescape(k), true), uriEncode(unescape(v), true)
		if presigned && k == presignSignatureQP {
			continue
		}
		params = append(params, kv{k, v})
	}
	sort.Slice(params, func(i, j int) bool {
		if params[i].k != params[j].k {
			return params[i].k < params[j].k
		}
		return params[i].v < params[j].v
	})
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = p.k + "=" + p.v
	}
	return strings.Join(parts, "&")
}

func unescape(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

// uriEncode is SigV4's UriEncode: every byte but A-Z a-z 0-9 - _ . ~ is
// percent-encoded in upper case ('/' too if encodeSlash).
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' || c == '/' && !encodeSlash {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// headerValues is a header's values as received; Host, Content-Length and
// Transfer-Encoding, which net/http moves out of the header map, included.
func headerValues(r *http.Request, name string) []string {
	switch strings.ToLower(name) {
	case "host":
		return []string{r.Host}
	case "content-length":
		if v := r.Header.Values("Content-Length"); len(v) > 0 {
			return v
		}
		if r.ContentLength >= 0 && (r.ContentLength > 0 || r.Body == nil || r.Body == http.NoBody || r.Method == http.MethodPut || r.Method == http.MethodPost) {
			return []string{strconv.FormatInt(r.ContentLength, 10)}
		}
		return nil
	case "transfer-encoding":
		if v := r.Header.Values("Transfer-Encoding"); len(v) > 0 {
			return v
		}
		return r.TransferEncoding
	}
	return r.Header.Values(name)
}

// canonicalHeaderValue joins a header's values with commas, each trimmed
// and with inner runs of spaces collapsed to one.
func canonicalHeaderValue(r *http.Request, name string) string {
	vals := headerValues(r, name)
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(out, ",")
}

func stringToSign(amzDate, scope, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return sigAlgorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
}

// signingKey derives the SigV4 signing key from a secret.
func signingKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, scopeTerminator)
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// diagnose looks for a likely cause of a signature mismatch by trying the
// changes a proxy commonly makes: the signature matches the request with
// its path encoded as S3 would encode it, or with a different Host port.
func diagnose(r *http.Request, sr signedRequest, key []byte) string {
	matches := func(rr *http.Request) bool {
		sts := stringToSign(sr.AmzDate, sr.Cred.scope(), canonicalRequest(rr, sr))
		return hex.EncodeToString(hmacSHA256(key, sts)) == strings.ToLower(sr.Signature)
	}
	path := canonicalURI(r)
	if alt := uriEncode(unescape(path), false); alt != path {
		rr := r.Clone(r.Context())
		rr.RequestURI = alt
		if matches(rr) {
			return fmt.Sprintf("the signature is for the path %q; the request's path %q was re-encoded in transit", alt, path)
		}
	}
	alts := []string{r.Host + ":80", r.Host + ":443"}
	if h, _, err := net.SplitHostPort(r.Host); err == nil {
		alts = []string{h}
	}
	for _, h := range alts {
		rr := r.Clone(r.Context())
		rr.Host = h
		if matches(rr) {
			return fmt.Sprintf("the signature is for Host %q, but the request's Host is %q", h, r.Host)
		}
	}
	return ""
}
