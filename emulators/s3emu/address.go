package s3emu

import (
	"net"
	"net/http"
	"strings"
)

// target is what a request addresses.
type target struct {
	Bucket string
	Key    string
	// Virtual is true for a virtual-hosted request (bucket in the host).
	Virtual bool
}

// resource is the target as S3 names it in errors.
func (t target) resource() string {
	switch {
	case t.Bucket == "":
		return "/"
	case t.Key == "":
		return "/" + t.Bucket
	}
	return "/" + t.Bucket + "/" + t.Key
}

// address resolves a request's bucket and key: virtual-hosted when the
// host (port ignored) is BUCKET.<HostSuffix> or BUCKET.s3.<region>.amazonaws.com,
// path style otherwise.
func (s *Server) address(r *http.Request) target {
	host := strings.ToLower(r.Host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(host, ".")
	path := r.URL.Path
	for _, suffix := range []string{s.hostSuffix, "s3." + s.region + ".amazonaws.com"} {
		if b, ok := strings.CutSuffix(host, "."+suffix); ok && b != "" {
			return target{Bucket: b, Key: strings.TrimPrefix(path, "/"), Virtual: true}
		}
	}
	path = strings.TrimPrefix(path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	return target{Bucket: bucket, Key: key}
}
