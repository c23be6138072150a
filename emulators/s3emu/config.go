package s3emu

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// Config is the bucket service's configuration.
type Config struct {
	// Region is the service's region, the one a credential scope must name;
	// default us-east-1.
	Region string `json:"region,omitempty"`
	// HostSuffix makes BUCKET.<HostSuffix> a virtual-hosted request for
	// BUCKET (the port is ignored); default "s3.<Region>.example". Hosts
	// ending in ".s3.<Region>.amazonaws.com" are virtual-hosted too; any
	// other host is path style (/BUCKET/KEY).
	HostSuffix string `json:"hostSuffix,omitempty"`
	// Credentials maps access key ids to their secret access keys.
	Credentials map[string]string `json:"credentials,omitempty"`
	// Buckets exist from the start.
	Buckets []BucketConfig `json:"buckets,omitempty"`
	// DataDir, if set, is where buckets and objects are kept (and loaded
	// from at start): uploads stream to files there and downloads stream
	// from them, so no object is held in memory. Otherwise objects live in
	// memory.
	DataDir string `json:"dataDir,omitempty"`
	// MaxBytes bounds the bytes stored (in memory or under DataDir); an
	// upload that would pass it fails with 507 InsufficientStorage. 0 means
	// no bound.
	MaxBytes int64 `json:"maxBytes,omitempty"`
	// UploadReadTimeout is the longest wait for the next bytes of a
	// request body; a stalled upload then fails with 400 RequestTimeout
	// and its connection is closed. Default 30s.
	UploadReadTimeout rules.Duration `json:"uploadReadTimeout,omitempty"`
	// Now is the server's clock; default time.Now.
	Now func() time.Time `json:"-"`
	// MaxSkew is the largest difference allowed between a request's
	// signing time and the server's clock; default 15 minutes.
	MaxSkew time.Duration `json:"maxSkew,omitempty"`
}

// BucketConfig is a bucket that exists from the start.
type BucketConfig struct {
	Name string `json:"name"`
	// AnonymousRead lets unsigned requests get, head and list.
	AnonymousRead bool           `json:"anonymousRead,omitempty"`
	Objects       []ObjectConfig `json:"objects,omitempty"`
}

// ObjectConfig is an object that exists from the start: Body, or else
// synthetic content of Size bytes (synth.Object{Path: "/"+bucket+"/"+key,
// Size, Version: "1"}).
type ObjectConfig struct {
	Key          string `json:"key"`
	Body         string `json:"body,omitempty"`
	Size         int64  `json:"size,omitempty"`
	ContentType  string `json:"contentType,omitempty"`
	CacheControl string `json:"cacheControl,omitempty"`
}

// Server is the bucket service. It is safe for concurrent use.
type Server struct {
	region     string
	hostSuffix string
	verifier   *verifier
	store      *store
	now        func() time.Time
	idPrefix   string
	idSeq      atomic.Uint64
	// uploadTimeout bounds the wait for an upload body's next bytes.
	uploadTimeout time.Duration
	// scratch holds small request bodies (XML documents) while they are
	// checked.
	scratch *blobstore.Store
	uploads uploads // multipart uploads in progress
}

// New checks cfg and returns a server with its buckets and objects.
func New(cfg Config) (*Server, error) {
	var errs fielderr.List
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	} else if !validRegion(cfg.Region) {
		errs.Add("region", "%q is not a region name (lowercase letters, digits and hyphens)", cfg.Region)
	}
	if cfg.HostSuffix == "" {
		cfg.HostSuffix = "s3." + cfg.Region + ".example"
	}
	cfg.HostSuffix = strings.ToLower(strings.TrimPrefix(cfg.HostSuffix, "."))
	if strings.ContainsAny(cfg.HostSuffix, ":/ ") {
		errs.Add("hostSuffix", "%q must be a host name without port or scheme", cfg.HostSuffix)
	}
	for id, secret := range cfg.Credentials {
		f := fmt.Sprintf("credentials[%q]", id)
		switch {
		case id == "" || strings.ContainsAny(id, "/ ,=") || len(id) > 128:
			errs.Add(f, "access key id must be 1-128 characters without '/', ',', '=' or spaces")
		case secret == "":
			errs.Add(f, "secret access key is empty")
		}
	}
	if cfg.MaxSkew < 0 {
		errs.Add("maxSkew", "must not be negative")
	} else if cfg.MaxSkew == 0 {
		cfg.MaxSkew = 15 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxBytes < 0 {
		errs.Add("maxBytes", "must not be negative")
	}
	if cfg.UploadReadTimeout < 0 {
		errs.Add("uploadReadTimeout", "must not be negative")
	} else if cfg.UploadReadTimeout == 0 {
		cfg.UploadReadTimeout = rules.Duration(blobstore.DefaultReadTimeout)
	}
	seen := map[string]bool{}
	for i, b := range cfg.Buckets {
		f := fmt.Sprintf("buckets[%d]", i)
		if msg := checkBucketName(b.Name); msg != "" {
			errs.Add(f+".name", "%q: %s", b.Name, msg)
		} else if seen[b.Name] {
			errs.Add(f+".name", "bucket %q is configured twice", b.Name)
		}
		seen[b.Name] = true
		keys := map[string]bool{}
		for j, o := range b.Objects {
			of := fmt.Sprintf("%s.objects[%d]", f, j)
			switch {
			case o.Key == "":
				errs.Add(of+".key", "is empty")
			case len(o.Key) > 1024:
				errs.Add(of+".key", "is longer than 1024 bytes")
			case keys[o.Key]:
				errs.Add(of+".key", "%q is configured twice", o.Key)
			}
			keys[o.Key] = true
			if o.Size < 0 {
				errs.Add(of+".size", "must not be negative")
			}
			if o.Body != "" && o.Size != 0 {
				errs.Add(of, "give body or size, not both")
			}
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	st, err := newStore(cfg.DataDir, cfg.MaxBytes, cfg.Now)
	if err != nil {
		return nil, fmt.Errorf("dataDir: %w", err)
	}
	scratch, _ := blobstore.New(blobstore.Config{MaxBytes: 64 << 20})
	for _, b := range cfg.Buckets {
		if err := st.addConfigBucket(b); err != nil {
			return nil, fmt.Errorf("buckets %q: %w", b.Name, err)
		}
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	s := &Server{
		region:        cfg.Region,
		hostSuffix:    cfg.HostSuffix,
		store:         st,
		now:           cfg.Now,
		idPrefix:      strings.ToUpper(hex.EncodeToString(rnd[:])),
		uploadTimeout: cfg.UploadReadTimeout.D(),
		scratch:       scratch,
		uploads:       uploads{m: map[string]*mpUpload{}},
		verifier: &verifier{
			region: cfg.Region, creds: cfg.Credentials, now: cfg.Now, maxSkew: cfg.MaxSkew,
		},
	}
	return s, nil
}

func validRegion(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return s != ""
}

// checkBucketName returns why name is not a valid bucket name, or "".
func checkBucketName(name string) string {
	if len(name) < 3 || len(name) > 63 {
		return "bucket names are 3 to 63 characters long"
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return "bucket names use only lowercase letters, digits, dots and hyphens"
		}
	}
	first, last := name[0], name[len(name)-1]
	if first == '.' || first == '-' || last == '.' || last == '-' {
		return "bucket names begin and end with a letter or digit"
	}
	if strings.Contains(name, "..") {
		return "bucket names have no two adjacent dots"
	}
	return ""
}

// newRequestID returns a fresh x-amz-request-id.
func (s *Server) newRequestID() string {
	return fmt.Sprintf("%s%08X", s.idPrefix, s.idSeq.Add(1))
}

func hostID(requestID string) string {
	return "s3emu/" + requestID
}
