package fetch

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/emulators/gcsemu"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/s3emu"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

const (
	testKey     = "AKIDEXAMPLE"
	testSecret  = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testKeyB    = "AKIDBACKUP"
	testSecret2 = "backup-secret"
	bucketHost  = "media-bucket.s3.eu-west-1.amazonaws.com"
)

// bucketLab is an originemu with s3emu buckets verifying SigV4 as
// listener backends (s3, s3-b, s3-host: only the bucket's virtual host
// addresses it) and a gcsemu Cloud Storage service (newGCS) behind an HTTP
// listener (gcs) and an h2 one (gcs-tls). The scripted answers are
// emulator rules: on s3, /fail-once/ answers 503 the first time, /fail/
// always 503, /redirect/z a 302 to other.test on s3-b; on gcs,
// /vod-bucket/go-away/ a 302 to other.test on s3-b.
type bucketLab struct {
	t      *testing.T
	emu    *originemu.Emulator
	client *upstream.Client
}

// s3Object is an s3emu object whose body names its path, as the tests
// expect of every object.
func s3Object(key string) s3emu.ObjectConfig {
	return s3emu.ObjectConfig{Key: key, Body: "object /" + key, ContentType: "text/plain", CacheControl: "max-age=60"}
}

// newS3 is an s3emu server knowing both test keys, in eu-west-1.
func newS3(t *testing.T, hostSuffix string, buckets ...s3emu.BucketConfig) *s3emu.Server {
	t.Helper()
	s, err := s3emu.New(s3emu.Config{
		Region: "eu-west-1", HostSuffix: hostSuffix,
		Credentials: map[string]string{testKey: testSecret, testKeyB: testSecret2},
		Buckets:     buckets,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const (
	gcsToken    = "ya29.token"   // the edge's token (GCS.Token)
	clientToken = "client-token" // a client's own token, also accepted
)

// gcsObject is a gcsemu object whose body names its bucket and name.
func gcsObject(bucket, name string) gcsemu.ObjectConfig {
	return gcsemu.ObjectConfig{Name: name, Body: gcsBody(bucket, name), ContentType: "text/plain"}
}

func gcsBody(bucket, name string) string { return "gcs " + bucket + "/" + name }

// gcsHash is the x-goog-hash Cloud Storage sends for body.
func gcsHash(body string) string {
	var c [4]byte
	binary.BigEndian.PutUint32(c[:], crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)))
	m := md5.Sum([]byte(body))
	return "crc32c=" + base64.StdEncoding.EncodeToString(c[:]) + ",md5=" + base64.StdEncoding.EncodeToString(m[:])
}

// newGCS is the Cloud Storage service: virtual-hosted at
// BUCKET.storage.test, path style on other hosts; public buckets
// vod-bucket, vod.example.com (dotted) and tls-bucket, and the private
// private-bucket, readable with gcsToken or clientToken.
func newGCS(t *testing.T) *gcsemu.Server {
	t.Helper()
	s, err := gcsemu.New(gcsemu.Config{
		HostSuffix: "storage.test",
		Tokens:     []string{gcsToken, clientToken},
		Buckets: []gcsemu.BucketConfig{
			{Name: "vod-bucket", Public: true, Objects: []gcsemu.ObjectConfig{gcsObject("vod-bucket", "seg/1.ts")}},
			{Name: "vod.example.com", Public: true, Objects: []gcsemu.ObjectConfig{gcsObject("vod.example.com", "seg/1.ts")}},
			{Name: "tls-bucket", Public: true, Objects: []gcsemu.ObjectConfig{gcsObject("tls-bucket", "tls/obj")}},
			{Name: "private-bucket", Objects: []gcsemu.ObjectConfig{gcsObject("private-bucket", "seg/1.ts")}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newBucketLab(t *testing.T) *bucketLab {
	t.Helper()
	// s3: virtual-hosted BUCKET.example.com (media.example.com, the
	// client's Host, and bucket.example.com, a hostRewrite).
	s3 := newS3(t, "example.com",
		s3emu.BucketConfig{Name: "media", Objects: []s3emu.ObjectConfig{
			s3Object("obj/a b.ts"), s3Object("obj/head"), s3Object("fail-once/x"),
		}},
		s3emu.BucketConfig{Name: "bucket", Objects: []s3emu.ObjectConfig{s3Object("rw/port")}},
		s3emu.BucketConfig{Name: "a-bucket", Objects: []s3emu.ObjectConfig{s3Object("k")}},
	)
	// s3-b: the failover's backup-bucket.s3.eu-west-1.amazonaws.com and the
	// redirect's other.test.
	s3b := newS3(t, "test",
		s3emu.BucketConfig{Name: "backup-bucket", Objects: []s3emu.ObjectConfig{s3Object("fail/y")}},
		s3emu.BucketConfig{Name: "other", Objects: []s3emu.ObjectConfig{s3Object("z")}},
	)
	// s3-host: only media-bucket.s3.eu-west-1.amazonaws.com is virtual-hosted;
	// any other Host is path style.
	s3host := newS3(t, "",
		s3emu.BucketConfig{Name: "media-bucket", Objects: []s3emu.ObjectConfig{s3Object("rw/ok")}},
	)
	gcs := newGCS(t)
	emu, err := originemu.Start(context.Background(), originemu.Config{
		Logger: slog.New(slog.DiscardHandler),
		Listeners: []originemu.ListenerConfig{
			{Name: "s3", Profile: originemu.HTTP, Backend: s3},
			{Name: "s3-b", Profile: originemu.HTTP, Backend: s3b},
			{Name: "s3-host", Profile: originemu.HTTP, Backend: s3host},
			{Name: "gcs", Profile: originemu.HTTP, Backend: gcs},
			{Name: "gcs-tls", Profile: originemu.H2, Backend: gcs},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emu.Close() })
	resolve := map[string]string{}
	for _, n := range []string{"origin.test", "backup.test", "other.test", "storage.test", bucketHost} {
		resolve[n] = "127.0.0.1"
	}
	client := upstream.New(upstream.Options{RootCAs: emu.CA().Pool(), Resolve: resolve, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(client.Close)
	l := &bucketLab{t: t, emu: emu, client: client}
	redirectTo := "http://other.test:" + strconv.Itoa(l.port("s3-b"))
	if _, err := emu.AddRules(
		rules.Rule{Match: rules.Match{Listener: "s3", PathPrefix: "/fail-once/"}, Times: 1, Action: rules.Action{Status: http.StatusServiceUnavailable}},
		rules.Rule{Match: rules.Match{Listener: "s3", PathPrefix: "/fail/"}, Unlimited: true, Action: rules.Action{Status: http.StatusServiceUnavailable}},
		rules.Rule{Match: rules.Match{Listener: "s3", Path: "/redirect/z"}, Unlimited: true,
			Action: rules.Action{Redirect: &rules.Redirect{Status: http.StatusFound, Location: redirectTo + "/z"}}},
		// The bucket origin redirects /vod-bucket/go-away/x (path style) to
		// another host, s3-b.
		rules.Rule{Match: rules.Match{Listener: "gcs", PathPrefix: "/vod-bucket/go-away/"}, Unlimited: true,
			Action: rules.Action{Redirect: &rules.Redirect{Status: http.StatusFound, Location: redirectTo + "/vod-bucket/go-away/x"}}},
	); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *bucketLab) port(listener string) int {
	_, p, _ := net.SplitHostPort(l.emu.Addr(listener))
	n, _ := strconv.Atoi(p)
	return n
}

// s3Origin is an awsV4Authentication origin on listener.
func (l *bucketLab) s3Origin(name, listener, key, secret string, mods ...func(*config.EffectiveOrigin)) config.EffectiveOrigin {
	o := config.EffectiveOrigin{
		Name: name, Address: "origin.test", Protocol: config.ProtocolHTTP, Port: l.port(listener),
		MaxAttempts: 1, RetryConditions: []string{config.RetryConnectFailure},
		ConnectTimeout: 2 * time.Second, MaxAttemptsTimeout: 5 * time.Second,
		ReadTimeout: 2 * time.Second, ResponseTimeout: 5 * time.Second,
		AWSV4:       &config.AWSV4Authentication{AccessKeyID: key, SecretAccessKeyVersion: "projects/p/secrets/s/versions/1", OriginRegion: "eu-west-1"},
		AWSV4Secret: secret,
	}
	for _, m := range mods {
		m(&o)
	}
	return o
}

// engine builds an engine whose signing clock advances one second per
// signature, so that every attempt's signature differs.
func (l *bucketLab) engine(opts []Option, origins ...config.EffectiveOrigin) *Engine {
	m := map[string]config.EffectiveOrigin{}
	for _, o := range origins {
		m[o.Name] = o
	}
	e := New(l.client, m, slog.New(slog.DiscardHandler), opts...)
	var mu sync.Mutex
	clock := time.Now().Add(-time.Minute)
	e.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Second)
		return clock
	}
	return e
}

func (l *bucketLab) do(e *Engine, primary string, r Request) (*Result, string) {
	l.t.Helper()
	res := e.Fetch(context.Background(), primary, r)
	var body string
	if res.Response != nil {
		b, _ := io.ReadAll(res.Response.Body)
		res.Response.Body.Close()
		body = string(b)
	}
	return res, body
}

// journal returns the requests matching listener and prefix once n of them
// have ended (their notes complete); fewer if they do not come in time.
func (l *bucketLab) journal(listener, prefix string, n int) []journal.Request {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	q := journal.Query{Listener: listener, PathPrefix: prefix}
	l.emu.Journal().WaitEnded(ctx, q, n)
	return l.emu.Journal().Query(q).Requests
}

// wantSigned checks a journal request carries a SigV4 signature over
// exactly host, x-amz-content-sha256 and x-amz-date, with key's credential,
// and that s3emu accepted it.
func wantSigned(t *testing.T, r journal.Request, key string) {
	t.Helper()
	wantSignedHeaders(t, r, key)
	if want := "sigv4: ok (" + key + ")"; !strings.Contains(r.Note, want) {
		t.Fatalf("s3emu: %q, want %q (host %q)", r.Note, want, r.Host)
	}
}

// wantScripted checks a journal request was answered by an emulator rule
// (before s3emu, so unverified) and carries a well-formed signature.
func wantScripted(t *testing.T, r journal.Request, key string) {
	t.Helper()
	if r.Rule == "" || strings.Contains(r.Note, "sigv4:") {
		t.Fatalf("not answered by a rule: rule %q note %q", r.Rule, r.Note)
	}
	wantSignedHeaders(t, r, key)
}

// wantSignedHeaders checks a journal request carries a SigV4 signature
// over exactly host, x-amz-content-sha256 and x-amz-date, with key's
// credential.
func wantSignedHeaders(t *testing.T, r journal.Request, key string) {
	t.Helper()
	auth := header(r, "Authorization")
	if len(auth) != 1 || !strings.HasPrefix(auth[0], "AWS4-HMAC-SHA256 Credential="+key+"/") ||
		!strings.Contains(auth[0], "/eu-west-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=") {
		t.Fatalf("Authorization %q", auth)
	}
	if d := header(r, "X-Amz-Date"); len(d) != 1 || len(d[0]) != len("20060102T150405Z") {
		t.Fatalf("x-amz-date %q", d)
	}
	if p := header(r, "X-Amz-Content-Sha256"); len(p) != 1 || p[0] != "UNSIGNED-PAYLOAD" {
		t.Fatalf("x-amz-content-sha256 %q", p)
	}
}

func sig(r journal.Request) string {
	a := header(r, "Authorization")
	if len(a) == 0 {
		return ""
	}
	_, s, _ := strings.Cut(a[0], "Signature=")
	return s
}

// BKT-1, BKT-2: a signed GET is accepted by a verifying origin; client
// headers go unsigned; the client's own Authorization and x-amz-* do not
// reach the origin.
func TestSigV4GET(t *testing.T) {
	l := newBucketLab(t)
	e := l.engine(nil, l.s3Origin("s3", "s3", testKey, testSecret))
	// No versionId: s3emu answers S3 subresources such as ?versionId with
	// 501 NotImplemented; other query parameters are signed all the same.
	// A raw '+' in the query: the signer reads it as a space and the
	// reference sends the query exactly as signed (x=a%20b), so a verifying
	// origin agrees whatever it would make of a raw '+'.
	r := get("/obj/a%20b.ts?v=3&x=a+b")
	r.Header.Set("User-Agent", "player/1.0")
	r.Header.Set("X-Custom", "kept")
	r.Header.Set("Authorization", "Bearer client")
	r.Header.Set("X-Amz-Meta-Client", "dropped")
	res, body := l.do(e, "s3", r)
	if res.Status != 200 || body != "object /obj/a b.ts" {
		t.Fatalf("status %d %q %+v", res.Status, body, res.Attempts)
	}
	reqs := l.journal("s3", "/obj/", 1)
	if len(reqs) != 1 {
		t.Fatalf("journal %+v", reqs)
	}
	wantSigned(t, reqs[0], testKey)
	if reqs[0].Host != "media.example.com" || reqs[0].URI != "/obj/a%20b.ts?v=3&x=a%20b" {
		t.Fatalf("host %q uri %q", reqs[0].Host, reqs[0].URI)
	}
	if ua := header(reqs[0], "User-Agent"); len(ua) != 1 || ua[0] != "player/1.0" {
		t.Fatalf("user-agent %q", ua)
	}
	if c := header(reqs[0], "X-Custom"); len(c) != 1 || c[0] != "kept" {
		t.Fatalf("x-custom %q", c)
	}
	if m := header(reqs[0], "X-Amz-Meta-Client"); len(m) != 0 {
		t.Fatalf("client x-amz header reached the origin: %q", m)
	}

	t.Run("HEAD", func(t *testing.T) {
		r := get("/obj/head")
		r.Method = http.MethodHead
		res, _ := l.do(e, "s3", r)
		reqs := l.journal("s3", "/obj/head", 1)
		if res.Status != 200 || len(reqs) != 1 || reqs[0].Method != "HEAD" {
			t.Fatalf("status %d, journal %+v", res.Status, reqs)
		}
		wantSigned(t, reqs[0], testKey)
	})
	t.Run("OPTIONS", func(t *testing.T) {
		// Signed and accepted; s3emu then answers an object OPTIONS with
		// 405 MethodNotAllowed, passed through.
		r := get("/obj/options")
		r.Method = http.MethodOptions
		res, _ := l.do(e, "s3", r)
		reqs := l.journal("s3", "/obj/options", 1)
		if res.Status != 405 || len(reqs) != 1 || !strings.Contains(reqs[0].Note, "s3: MethodNotAllowed") {
			t.Fatalf("status %d, journal %+v", res.Status, reqs)
		}
		wantSigned(t, reqs[0], testKey)
	})
	t.Run("wrong secret is rejected", func(t *testing.T) {
		// s3emu really verifies.
		e := l.engine(nil, l.s3Origin("s3", "s3", testKey, "not-the-secret"))
		res, body := l.do(e, "s3", get("/obj/wrong-secret"))
		reqs := l.journal("s3", "/obj/wrong-secret", 1)
		if res.Status != 403 || len(reqs) != 1 || !strings.Contains(reqs[0].Note, "sigv4: SignatureDoesNotMatch") ||
			!strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") {
			t.Fatalf("status %d %q, journal %+v", res.Status, body, reqs)
		}
	})
	t.Run("POST is not sent", func(t *testing.T) {
		// BKT-1: only GET, HEAD and OPTIONS are signed; the reference
		// answers 502 without an origin request.
		r := get("/obj/post")
		r.Method = http.MethodPost
		r.Body, r.ContentLength = strings.NewReader("data"), 4
		res, _ := l.do(e, "s3", r)
		if res.Status != 502 || res.Reason != "proxy_configuration_error" || len(res.Attempts) != 0 || res.Response != nil {
			t.Fatalf("status %d %q attempts %+v", res.Status, res.Reason, res.Attempts)
		}
		if reqs := l.journal("", "/obj/post", 0); len(reqs) != 0 {
			t.Fatalf("origin saw %+v", reqs)
		}
	})
}

// BKT-1: every attempt is signed afresh: a retry with a new date and
// signature, a failover with its own key and Host, a followed redirect on
// the Location's Host.
func TestSigV4EachAttempt(t *testing.T) {
	l := newBucketLab(t)
	t.Run("retry", func(t *testing.T) {
		e := l.engine(nil, l.s3Origin("s3", "s3", testKey, testSecret, attempts(2), retryOn(config.RetryHTTP5xx)))
		res, _ := l.do(e, "s3", get("/fail-once/x"))
		reqs := l.journal("s3", "/fail-once/x", 2)
		if res.Status != 200 || len(reqs) != 2 || reqs[0].Status != 503 {
			t.Fatalf("status %d, journal %+v", res.Status, reqs)
		}
		wantScripted(t, reqs[0], testKey) // the rule's 503
		wantSigned(t, reqs[1], testKey)
		if header(reqs[0], "X-Amz-Date")[0] == header(reqs[1], "X-Amz-Date")[0] || sig(reqs[0]) == sig(reqs[1]) {
			t.Fatalf("retry not signed afresh: %v / %v", reqs[0].Headers, reqs[1].Headers)
		}
	})
	t.Run("failover", func(t *testing.T) {
		// The rule fails /fail/ on s3 only: the backup's s3emu verifies
		// the failover's own key and Host and serves the object.
		p := l.s3Origin("s3", "s3", testKey, testSecret, retryOn(config.RetryHTTP5xx), failover("b"))
		b := l.s3Origin("b", "s3-b", testKeyB, testSecret2, hostRewrite("backup-bucket.s3.eu-west-1.amazonaws.com"))
		e := l.engine(nil, p, b)
		res, body := l.do(e, "s3", get("/fail/y"))
		pr, br := l.journal("s3", "/fail/y", 1), l.journal("s3-b", "/fail/y", 1)
		if res.Status != 200 || body != "object /fail/y" || len(pr) != 1 || len(br) != 1 || pr[0].Status != 503 {
			t.Fatalf("status %d %q, journal %+v / %+v", res.Status, body, pr, br)
		}
		wantScripted(t, pr[0], testKey) // the rule's 503
		wantSigned(t, br[0], testKeyB)
		if br[0].Host != "backup-bucket.s3.eu-west-1.amazonaws.com" || pr[0].Host != "media.example.com" {
			t.Fatalf("hosts %q %q", pr[0].Host, br[0].Host)
		}
	})
	t.Run("redirect", func(t *testing.T) {
		e := l.engine(nil, l.s3Origin("s3", "s3", testKey, testSecret, attempts(2), redirects(302)))
		res, body := l.do(e, "s3", get("/redirect/z"))
		pr, rr := l.journal("s3", "/redirect/z", 1), l.journal("s3-b", "/z", 1)
		if res.Status != 200 || body != "object /z" || len(pr) != 1 || len(rr) != 1 {
			t.Fatalf("status %d %q, journal %+v / %+v", res.Status, body, pr, rr)
		}
		wantScripted(t, pr[0], testKey) // the rule's 302
		wantSigned(t, rr[0], testKey)
		if want := "other.test:" + strconv.Itoa(l.port("s3-b")); rr[0].Host != want {
			t.Fatalf("redirect host %q, want %q", rr[0].Host, want)
		}
	})
}

// BKT-2, BKT-3: the signature is computed after the rewrites, on the Host
// sent; an origin serving only the bucket's virtual host accepts a route
// hostRewrite to it and refuses the client's Host.
func TestSigV4HostRewrite(t *testing.T) {
	l := newBucketLab(t)
	e := l.engine(nil, l.s3Origin("s3", "s3-host", testKey, testSecret))
	r := get("/rw/ok")
	r.RouteHostRewrite = bucketHost
	res, _ := l.do(e, "s3", r)
	reqs := l.journal("s3-host", "/rw/ok", 1)
	if res.Status != 200 || len(reqs) != 1 || reqs[0].Host != bucketHost {
		t.Fatalf("status %d, journal %+v", res.Status, reqs)
	}
	wantSigned(t, reqs[0], testKey)

	// Without the rewrite the client's Host reaches the bucket: it is not
	// the bucket's virtual host, so s3emu takes the request as path style
	// (bucket "rw", which does not exist) and refuses it, though the
	// signature, made for that Host, is good.
	res, body := l.do(e, "s3", get("/rw/client-host"))
	reqs = l.journal("s3-host", "/rw/client-host", 1)
	if res.Status != 404 || len(reqs) != 1 || reqs[0].Host != "media.example.com" ||
		!strings.Contains(reqs[0].Note, "s3: NoSuchBucket") || !strings.Contains(body, "<BucketName>rw</BucketName>") {
		t.Fatalf("status %d %q, journal %+v", res.Status, body, reqs)
	}
	wantSigned(t, reqs[0], testKey)

	// An origin hostRewrite with a port is signed with the port.
	e = l.engine(nil, l.s3Origin("s3", "s3", testKey, testSecret, hostRewrite("bucket.example.com:8443")))
	res, _ = l.do(e, "s3", get("/rw/port"))
	reqs = l.journal("s3", "/rw/port", 1)
	if res.Status != 200 || len(reqs) != 1 || reqs[0].Host != "bucket.example.com:8443" {
		t.Fatalf("status %d, journal %+v", res.Status, reqs)
	}
	wantSigned(t, reqs[0], testKey)
}

// BKT-2: a Host changed after signing breaks the signature (what a
// mismatched hostRewrite does at a verifying origin).
func TestSigV4HostChangedAfterSigning(t *testing.T) {
	l := newBucketLab(t) // s3 serves bucket "a-bucket" as a-bucket.example.com
	base := l.emu.URL("s3")
	o := config.EffectiveOrigin{AWSV4: &config.AWSV4Authentication{AccessKeyID: testKey, OriginRegion: "eu-west-1"}, AWSV4Secret: testSecret}
	for _, tc := range []struct {
		signedHost, sentHost string
		want                 int
	}{
		{"a-bucket.example.com", "a-bucket.example.com", 200},
		{"a-bucket.example.com", "b-bucket.example.com", 403},
	} {
		req, _ := http.NewRequest("GET", base+"/k?x=1", nil)
		req.Header.Set("User-Agent", "changed-by-a-proxy") // unsigned: may change
		if err := signV4(context.Background(), req, o, tc.signedHost, time.Now()); err != nil {
			t.Fatal(err)
		}
		req.Host = tc.sentHost
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || tc.want == 403 && !strings.Contains(string(b), "<Code>SignatureDoesNotMatch</Code>") {
			t.Errorf("signed for %s, sent to %s: %d %s", tc.signedHost, tc.sentHost, resp.StatusCode, b)
		}
	}
	reqs := l.journal("s3", "/k", 2)
	if len(reqs) != 2 || !strings.Contains(reqs[0].Note, "sigv4: ok ("+testKey+")") ||
		!strings.Contains(reqs[1].Note, "sigv4: SignatureDoesNotMatch") {
		t.Fatalf("journal %+v", reqs)
	}
}

func gcsOrigin(bucket string, port int, mods ...func(*config.EffectiveOrigin)) config.EffectiveOrigin {
	o := config.EffectiveOrigin{
		Name: "gcs", Address: "gs://" + bucket, Protocol: config.ProtocolHTTP2, Port: 443,
		MaxAttempts: 1, RetryConditions: []string{config.RetryConnectFailure},
		ConnectTimeout: 2 * time.Second, MaxAttemptsTimeout: 5 * time.Second,
		ReadTimeout: 2 * time.Second, ResponseTimeout: 5 * time.Second,
	}
	for _, m := range mods {
		m(&o)
	}
	return o
}

func endpoint(t *testing.T, s string) *url.URL {
	u, err := ParseGCSEndpoint(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// HST-4, BKT-4: gs:// origins go to the GCS endpoint with the Host from
// the bucket; hostRewrite is ignored; the bearer token is sent. The
// endpoint is gcsemu, which serves the object only on the Host and path
// naming its bucket, and reads a private bucket only with a good token.
func TestGCSOrigin(t *testing.T) {
	l := newBucketLab(t)
	port := strconv.Itoa(l.port("gcs"))
	token := func() (string, error) { return gcsToken, nil }
	tests := []struct {
		name, endpoint, bucket string
		token                  bool
		wantHost, wantPath     string
		wantCache              string // BKT-5: Cloud Storage's Cache-Control
	}{
		{"ip endpoint is path-style", "http://127.0.0.1:" + port, "vod-bucket", false, "127.0.0.1:" + port, "/vod-bucket/seg/1.ts", "public, max-age=3600"},
		{"named endpoint is virtual-hosted", "http://storage.test:" + port, "vod-bucket", true, "vod-bucket.storage.test:" + port, "/seg/1.ts", "public, max-age=3600"},
		{"dotted bucket is path-style", "http://storage.test:" + port, "vod.example.com", false, "storage.test:" + port, "/vod.example.com/seg/1.ts", "public, max-age=3600"},
		{"token", "http://127.0.0.1:" + port, "private-bucket", true, "127.0.0.1:" + port, "/private-bucket/seg/1.ts", "private, max-age=0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := GCS{Endpoint: endpoint(t, tc.endpoint)}
			if tc.token {
				g.Token = token
			}
			e := l.engine([]Option{WithGCS(g)}, gcsOrigin(tc.bucket, 0, hostRewrite("origin-rewrite.example.com")))
			r := get("/seg/1.ts")
			r.RouteHostRewrite = "route-rewrite.example.com" // HST-4: ignored
			// The client's own credentials: passed on without a token,
			// replaced by it with one. gcsemu accepts this token too, so
			// either way the object is read.
			r.Header.Set("Authorization", "Bearer "+clientToken)
			seq := l.emu.Journal().Query(journal.Query{}).Requests
			res, body := l.do(e, "gcs", r)
			q := journal.Query{Listener: "gcs", AfterSeq: lastSeq(seq)}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			l.emu.Journal().WaitEnded(ctx, q, 1) // the note is complete
			cancel()
			reqs := l.emu.Journal().Query(q).Requests
			if res.Status != 200 || len(reqs) != 1 || body != gcsBody(tc.bucket, "seg/1.ts") {
				t.Fatalf("status %d %q %+v, journal %+v", res.Status, body, res.Attempts, reqs)
			}
			if reqs[0].Host != tc.wantHost || reqs[0].Path != tc.wantPath {
				t.Fatalf("origin saw host %q path %q, want %q %q", reqs[0].Host, reqs[0].Path, tc.wantHost, tc.wantPath)
			}
			// BKT-5: gcsemu's headers reach the client as sent.
			if cc := res.Response.Header.Get("Cache-Control"); cc != tc.wantCache {
				t.Errorf("Cache-Control %q, want %q", cc, tc.wantCache)
			}
			if h := res.Response.Header.Get("X-Goog-Hash"); h != gcsHash(body) {
				t.Errorf("x-goog-hash %q, want %q", h, gcsHash(body))
			}
			if res.Response.Header.Get("X-Goog-Generation") == "" {
				t.Errorf("no x-goog-generation passed through")
			}
			auth := header(reqs[0], "Authorization")
			want := "Bearer " + clientToken
			if tc.token {
				want = "Bearer " + gcsToken
			}
			if len(auth) != 1 || auth[0] != want {
				t.Fatalf("Authorization %q, want %q", auth, want)
			}
			if !strings.Contains(reqs[0].Note, "gcs: token ok") {
				t.Errorf("gcsemu note %q", reqs[0].Note)
			}
			if res.Attempts[0].Host != tc.wantHost {
				t.Errorf("attempt host %q", res.Attempts[0].Host)
			}
		})
	}
	// The private bucket refuses a read without a token (403) and with a
	// token it does not accept (401); both are origin answers passed on.
	for _, tc := range []struct {
		name     string
		token    func() (string, error)
		want     int
		wantNote string
		wantAuth []string
		wantCode string
	}{
		{"private bucket without a token", nil, 403, "gcs: anonymous", nil, "<Code>AccessDenied</Code>"},
		{"private bucket with a wrong token", func() (string, error) { return "ya29.wrong", nil }, 401, "gcs: bad token",
			[]string{"Bearer ya29.wrong"}, "<Code>AuthenticationRequired</Code>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := GCS{Endpoint: endpoint(t, "http://127.0.0.1:"+port), Token: tc.token}
			e := l.engine([]Option{WithGCS(g)}, gcsOrigin("private-bucket", 0, attempts(2)))
			seq := l.emu.Journal().Query(journal.Query{}).Requests
			res, body := l.do(e, "gcs", get("/seg/1.ts"))
			q := journal.Query{Listener: "gcs", AfterSeq: lastSeq(seq)}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			l.emu.Journal().WaitEnded(ctx, q, 1)
			cancel()
			reqs := l.emu.Journal().Query(q).Requests
			if res.Status != tc.want || res.Reason != "" || res.Response == nil || !strings.Contains(body, tc.wantCode) ||
				len(res.Attempts) != 1 || res.Attempts[0].Outcome.String() != "usable" {
				t.Fatalf("status %d %q %q %+v", res.Status, res.Reason, body, res.Attempts)
			}
			if len(reqs) != 1 || reqs[0].Status != tc.want || !strings.Contains(reqs[0].Note, tc.wantNote) ||
				strings.Join(header(reqs[0], "Authorization"), ",") != strings.Join(tc.wantAuth, ",") {
				t.Fatalf("journal %+v", reqs)
			}
			if cc := res.Response.Header.Get("Cache-Control"); cc != "private, max-age=0" {
				t.Errorf("Cache-Control %q", cc)
			}
			if tc.want == 401 && res.Response.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
	t.Run("token not sent to a redirect's other host", func(t *testing.T) {
		// The bucket origin's 302 is an emulator rule on gcs (see
		// newBucketLab); the redirect target is s3-b.
		g := GCS{Endpoint: endpoint(t, "http://127.0.0.1:"+port), Token: token}
		e := l.engine([]Option{WithGCS(g)}, gcsOrigin("vod-bucket", 0, attempts(2), redirects(302)))
		l.do(e, "gcs", get("/go-away/x"))
		first := l.journal("gcs", "/vod-bucket/go-away/x", 1)
		second := l.journal("s3-b", "/vod-bucket/go-away/x", 1)
		if len(first) != 1 || len(second) != 1 || first[0].Rule == "" || first[0].Status != 302 {
			t.Fatalf("journal %+v / %+v", first, second)
		}
		if a := header(first[0], "Authorization"); len(a) != 1 || a[0] != "Bearer "+gcsToken {
			t.Fatalf("bucket request Authorization %q", a)
		}
		if a := header(second[0], "Authorization"); len(a) != 0 {
			t.Fatalf("redirect target got Authorization %q", a)
		}
	})
	t.Run("https endpoint: SNI is the virtual host", func(t *testing.T) {
		g := GCS{Endpoint: endpoint(t, "https://storage.test:"+strconv.Itoa(l.port("gcs-tls")))}
		e := l.engine([]Option{WithGCS(g)}, gcsOrigin("tls-bucket", 0))
		res, body := l.do(e, "gcs", get("/tls/obj"))
		snap := l.emu.Journal().Query(journal.Query{Listener: "gcs-tls", PathPrefix: "/tls/obj"})
		want := "tls-bucket.storage.test"
		if res.Status != 200 || body != gcsBody("tls-bucket", "tls/obj") || len(snap.Requests) != 1 || snap.Requests[0].Host != want+":"+strconv.Itoa(l.port("gcs-tls")) ||
			len(snap.Conns) != 1 || snap.Conns[0].SNI != want || snap.Requests[0].Proto != "HTTP/2.0" {
			t.Fatalf("status %d %q (%+v), journal %+v / %+v", res.Status, body, res.Attempts, snap.Requests, snap.Conns)
		}
	})
}

func lastSeq(reqs []journal.Request) uint64 {
	if len(reqs) == 0 {
		return 0
	}
	return reqs[len(reqs)-1].Seq
}

// The target of the default endpoint, and the protocol choice.
func TestGCSTarget(t *testing.T) {
	e := New(nil, nil, nil)
	for _, tc := range []struct {
		name     string
		endpoint string
		protocol string
		bucket   string
		want     upstream.Target
		wantPath string
	}{
		{"default h2", "", config.ProtocolHTTP2, "vod", upstream.Target{Protocol: "HTTP2", Address: "storage.googleapis.com", Port: 443, Host: "vod.storage.googleapis.com"}, "/a"},
		{"default https", "", config.ProtocolHTTPS, "vod", upstream.Target{Protocol: "HTTPS", Address: "storage.googleapis.com", Port: 443, Host: "vod.storage.googleapis.com"}, "/a"},
		{"https endpoint, HTTP origin", "https://gcs.example.com", config.ProtocolHTTP, "vod", upstream.Target{Protocol: "HTTPS", Address: "gcs.example.com", Port: 443, Host: "vod.gcs.example.com"}, "/a"},
		{"http endpoint", "http://gcs.example.com:80", config.ProtocolHTTP2, "vod", upstream.Target{Protocol: "HTTP", Address: "gcs.example.com", Port: 80, Host: "vod.gcs.example.com"}, "/a"},
		{"localhost", "http://localhost:9000", config.ProtocolHTTP2, "vod", upstream.Target{Protocol: "HTTP", Address: "localhost", Port: 9000, Host: "localhost:9000"}, "/vod/a"},
		{"ipv6", "http://[::1]:9000", config.ProtocolHTTP2, "vod", upstream.Target{Protocol: "HTTP", Address: "::1", Port: 9000, Host: "[::1]:9000"}, "/vod/a"},
		{"dotted default", "", config.ProtocolHTTP2, "a.b.c", upstream.Target{Protocol: "HTTP2", Address: "storage.googleapis.com", Port: 443, Host: "storage.googleapis.com"}, "/a.b.c/a"},
	} {
		e.gcs = GCS{}
		if tc.endpoint != "" {
			e.gcs.Endpoint = endpoint(t, tc.endpoint)
		}
		got, path := e.gcsTarget(config.EffectiveOrigin{Protocol: tc.protocol}, tc.bucket, "/a")
		if got != tc.want || path != tc.wantPath {
			t.Errorf("%s: %+v %q, want %+v %q", tc.name, got, path, tc.want, tc.wantPath)
		}
	}
	for _, bad := range []string{"ftp://x", "http://", "http://x/path", "http://x?q", "x.example.com", "http://x:99999"} {
		if _, err := ParseGCSEndpoint(bad); err == nil {
			t.Errorf("ParseGCSEndpoint(%q) accepted", bad)
		}
	}
}
