package gcsemu

import (
	"crypto/rsa"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

// Server is the bucket service; it is safe for concurrent use.
type Server struct {
	suffix  string
	anyHost bool
	tokens  []string
	now     func() time.Time
	store   *store
	uploads *uploads
	// uploadTimeout bounds the wait for an upload body's next bytes.
	uploadTimeout time.Duration
	// serviceAccounts and hmacKeys verify V4 signed URLs.
	serviceAccounts map[string]*rsa.PublicKey
	hmacKeys        map[string]string
}

// New checks cfg and builds the service with its configured objects (and,
// with cfg.DataDir, those persisted by an earlier run).
func New(cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("gcsemu: %w", err)
	}
	s := &Server{
		suffix:  strings.ToLower(cfg.HostSuffix),
		anyHost: cfg.anyHost(),
		tokens:  append([]string(nil), cfg.Tokens...),
		now:     cfg.Now,
	}
	if s.suffix == "" {
		s.suffix = DefaultHostSuffix
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.uploadTimeout = cfg.UploadReadTimeout.D()
	s.hmacKeys = cfg.HMACKeys
	s.serviceAccounts = map[string]*rsa.PublicKey{}
	for i, sa := range cfg.ServiceAccounts {
		k, err := parseSigningKey(sa.KeyPEM)
		if err != nil || sa.ClientEmail == "" {
			return nil, fmt.Errorf("gcsemu: serviceAccounts[%d]: need a clientEmail and an RSA key, certificate or private key in keyPem: %v", i, err)
		}
		s.serviceAccounts[sa.ClientEmail] = k
	}
	blobs, err := blobstore.New(blobstore.Config{Dir: cfg.DataDir, MaxBytes: cfg.MaxBytes})
	if err != nil {
		return nil, fmt.Errorf("gcsemu: dataDir: %w", err)
	}
	if cfg.DataDir != "" {
		// Resumable sessions and configured objects of an earlier run are
		// not kept.
		used, err := persistedBlobs(cfg.DataDir)
		if err == nil {
			err = blobs.Sweep(func(name string) bool { return used[name] })
		}
		if err != nil {
			return nil, fmt.Errorf("gcsemu: dataDir: %w", err)
		}
	}
	s.store = newStore(s.now, blobs)
	s.uploads = newUploads()
	start := s.now().UTC()
	for _, bc := range cfg.Buckets {
		s.store.addBucket(&bucket{name: bc.Name, public: bc.Public, anonWrite: bc.AnonymousWrite, created: start})
		for _, oc := range bc.Objects {
			var o *object
			if oc.Body == "" && oc.Size > 0 {
				o = &object{bucket: bc.Name, name: oc.Name, size: oc.Size, metageneration: 1,
					synthetic: &synth.Object{Path: "/" + bc.Name + "/" + oc.Name, Size: oc.Size, Version: "1"}}
			} else {
				blob, err := blobs.Bytes([]byte(oc.Body))
				if err != nil {
					return nil, fmt.Errorf("gcsemu: buckets %q: object %q: %w", bc.Name, oc.Name, err)
				}
				o = newBlobObject(bc.Name, oc.Name, blob, nil)
			}
			o.contentType, o.cacheControl, o.metadata = oc.ContentType, oc.CacheControl, oc.Metadata
			s.store.load(o)
		}
	}
	if cfg.DataDir != "" {
		p, err := newPersister(cfg.DataDir, blobs)
		if err != nil {
			return nil, fmt.Errorf("gcsemu: dataDir: %w", err)
		}
		if err := p.loadInto(s.store); err != nil {
			return nil, fmt.Errorf("gcsemu: dataDir: %w", err)
		}
		s.store.persist = p
	}
	return s, nil
}

// ServeHTTP routes a request to the XML or JSON API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("X-Goog-Signature") {
		signed, err := s.verifySignedURL(r)
		if err != nil {
			if strings.HasPrefix(r.URL.Path, "/storage/v1/") || strings.HasPrefix(r.URL.Path, "/download/") || strings.HasPrefix(r.URL.Path, "/upload/") {
				writeJSONError(w, r, err)
			} else {
				writeXMLError(w, r, err)
			}
			return
		}
		r = signed
	}
	if b, ok := s.hostBucket(r.Host); ok {
		s.serveXML(w, r, b, strings.TrimPrefix(r.URL.EscapedPath(), "/"))
		return
	}
	p := r.URL.EscapedPath()
	switch {
	case strings.HasPrefix(p, "/storage/v1/"):
		s.serveJSON(w, r, strings.TrimPrefix(p, "/storage/v1/"), false)
	case strings.HasPrefix(p, "/download/storage/v1/"):
		s.serveJSON(w, r, strings.TrimPrefix(p, "/download/storage/v1/"), true)
	case strings.HasPrefix(p, "/upload/storage/v1/"):
		s.serveUpload(w, r, strings.TrimPrefix(p, "/upload/storage/v1/"))
	default:
		b, rest, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		name, err := url.PathUnescape(b)
		if name == "" && err == nil && isRead(r) {
			s.xmlService(w, r)
			return
		}
		if err != nil || name == "" {
			writeXMLError(w, r, errNotFound(p))
			return
		}
		s.serveXML(w, r, name, rest)
	}
}

// hostBucket returns the bucket a virtual-hosted request names: BUCKET.<suffix>,
// a Host that is itself a bucket name (CNAME style), or with anyHost a Host
// whose first label is a bucket.
func (s *Server) hostBucket(hostport string) (string, bool) {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if b, ok := strings.CutSuffix(host, "."+s.suffix); ok && b != "" {
		return b, true
	}
	if host == "" {
		return "", false
	}
	if s.store.bucket(host) != nil {
		return host, true
	}
	if s.anyHost {
		first, _, _ := strings.Cut(host, ".")
		if s.store.bucket(first) != nil {
			return first, true
		}
	}
	return "", false
}

// cacheControl is the object's Cache-Control or the bucket's default.
func cacheControl(b *bucket, o *object) string {
	switch {
	case o.cacheControl != "":
		return o.cacheControl
	case b != nil && b.public:
		return "public, max-age=3600"
	}
	return "private, max-age=0"
}
