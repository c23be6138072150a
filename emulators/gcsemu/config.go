package gcsemu

import (
	"fmt"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// DefaultHostSuffix is the XML API's virtual-host suffix.
const DefaultHostSuffix = "storage.googleapis.com"

// Config describes the service.
type Config struct {
	// HostSuffix makes BUCKET.<HostSuffix> a virtual-hosted bucket host;
	// default DefaultHostSuffix.
	HostSuffix string `json:"hostSuffix,omitempty"`
	// AnyHost (default true) also treats any Host whose first label is a
	// configured bucket as that bucket's virtual host.
	AnyHost *bool          `json:"anyHost,omitempty"`
	Buckets []BucketConfig `json:"buckets"`
	// Tokens are the bearer tokens accepted (for private buckets and writes).
	Tokens []string `json:"tokens,omitempty"`
	// ServiceAccounts verify V4 signed URLs signed GOOG4-RSA-SHA256;
	// HMACKeys (access id to secret) those signed GOOG4-HMAC-SHA256. A
	// valid signed URL is allowed what a token is.
	ServiceAccounts []ServiceAccountKey `json:"serviceAccounts,omitempty"`
	HMACKeys        map[string]string   `json:"hmacKeys,omitempty"`
	// DataDir, if set, keeps objects written through the API on disk
	// (loaded again at start): uploads stream to files and downloads
	// stream from them. Otherwise they live in memory.
	DataDir string `json:"dataDir,omitempty"`
	// MaxBytes bounds the bytes stored (in memory or under DataDir); an
	// upload past it gets 507. 0 means no bound.
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// UploadReadTimeout is the longest wait for the next bytes of an
	// upload body; a stalled upload then gets 408 and its connection is
	// closed. Default 30s.
	UploadReadTimeout rules.Duration `json:"uploadReadTimeout,omitempty"`
	// Now is the clock; default time.Now.
	Now func() time.Time `json:"-"`
}

// BucketConfig is one bucket.
type BucketConfig struct {
	Name string `json:"name"`
	// Public allows anonymous reads.
	Public bool `json:"public,omitempty"`
	// AnonymousWrite also lets anonymous callers write and delete objects
	// while Tokens are configured (with no Tokens, anyone may write).
	AnonymousWrite bool           `json:"anonymousWrite,omitempty"`
	Objects        []ObjectConfig `json:"objects,omitempty"`
}

// ObjectConfig is an object present at start: Body, or else synthetic
// content of Size bytes (synth.Object{Path: "/"+bucket+"/"+name, Size,
// Version: "1"}).
type ObjectConfig struct {
	Name         string `json:"name"`
	Body         string `json:"body,omitempty"`
	Size         int64  `json:"size,omitempty"`
	ContentType  string `json:"contentType,omitempty"`
	CacheControl string `json:"cacheControl,omitempty"`
	// Metadata is the object's custom metadata (x-goog-meta-*).
	Metadata map[string]string `json:"metadata,omitempty"`
}

func (c *Config) anyHost() bool { return c.AnyHost == nil || *c.AnyHost }

// check reports every problem in c, each named by its field.
func (c *Config) check() error {
	var l fielderr.List
	if strings.ContainsAny(c.HostSuffix, "/: ") || strings.HasPrefix(c.HostSuffix, ".") {
		l.Add("hostSuffix", "%q is not a host name suffix", c.HostSuffix)
	}
	seen := map[string]bool{}
	for i, b := range c.Buckets {
		f := fmt.Sprintf("buckets[%d]", i)
		if err := checkBucketName(b.Name); err != nil {
			l.Add(f+".name", "%v", err)
		} else if seen[b.Name] {
			l.Add(f+".name", "duplicate bucket %q", b.Name)
		}
		seen[b.Name] = true
		names := map[string]bool{}
		for j, o := range b.Objects {
			of := fmt.Sprintf("%s.objects[%d]", f, j)
			if err := checkObjectName(o.Name); err != nil {
				l.Add(of+".name", "%v", err)
			} else if names[o.Name] {
				l.Add(of+".name", "duplicate object %q", o.Name)
			}
			names[o.Name] = true
			if o.Size < 0 {
				l.Add(of+".size", "must not be negative")
			}
			if o.Body != "" && o.Size != 0 {
				l.Add(of+".size", "give body or size, not both")
			}
		}
	}
	if c.MaxBytes < 0 {
		l.Add("maxBytes", "must not be negative")
	}
	if c.UploadReadTimeout < 0 {
		l.Add("uploadReadTimeout", "must not be negative")
	}
	for i, t := range c.Tokens {
		if t == "" || strings.ContainsAny(t, " \t\r\n") {
			l.Add(fmt.Sprintf("tokens[%d]", i), "must be non-empty with no spaces")
		}
	}
	return l.Err()
}

// checkBucketName applies Cloud Storage's bucket naming rules (loosely:
// 3-222 characters of a-z, 0-9, '-', '_', '.', starting and ending with a
// letter or digit).
func checkBucketName(n string) error {
	if len(n) < 3 || len(n) > 222 {
		return fmt.Errorf("bucket name %q must be 3 to 222 characters", n)
	}
	for i, r := range n {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (r == '-' || r == '_' || r == '.') && i > 0 && i < len(n)-1
		if !ok {
			return fmt.Errorf("bucket name %q: only a-z, 0-9, '-', '_' and '.' (not first or last)", n)
		}
	}
	return nil
}

// checkObjectName applies Cloud Storage's object naming rules: 1-1024
// bytes of UTF-8, no CR or LF, not "." or "..".
func checkObjectName(n string) error {
	switch {
	case n == "" || len(n) > 1024:
		return fmt.Errorf("object name must be 1 to 1024 bytes")
	case n == "." || n == "..":
		return fmt.Errorf("object name %q is not allowed", n)
	case strings.ContainsAny(n, "\r\n"):
		return fmt.Errorf("object name must not contain CR or LF")
	case !utf8Valid(n):
		return fmt.Errorf("object name must be valid UTF-8")
	}
	return nil
}
