package originemu

import (
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/proxy"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/synth"
)

// upstream is a plain net/http origin serving synthetic objects: size from
// the path's object, 100 MiB for /big.
func upstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream-Host", r.Host)
		w.Header().Set("X-Upstream-Saw", r.Header.Get("X-CDN"))
		if r.Method == http.MethodPut {
			n, err := io.Copy(io.Discard, r.Body)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			w.Header().Set("X-Received", strconv.FormatInt(n, 10))
			w.WriteHeader(http.StatusCreated)
			return
		}
		o := synth.Object{Path: r.URL.Path, Size: 100 << 20, Version: "up"}
		w.Header().Set("Etag", o.ETag())
		http.ServeContent(w, r, "", o.LastModified(), o.NewReader())
	}))
	t.Cleanup(srv.Close)
	return srv
}

// verifyStream reads body in pieces and checks every byte against o.
func verifyStream(t *testing.T, o synth.Object, body io.Reader) (int64, error) {
	t.Helper()
	buf := make([]byte, 1<<20)
	var off int64
	for {
		n, err := io.ReadFull(body, buf)
		if n > 0 {
			if verr := synth.Verify(o, off, buf[:n]); verr != nil {
				t.Fatalf("wrong bytes: %v", verr)
			}
			off += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) && off == o.Size {
			return off, nil
		}
		if err != nil {
			return off, err
		}
	}
}

// #16 item 5: the proxy backend passes a byte-exact 100 MiB object from an
// upstream, a truncation rule cuts it, request bodies stream upstream, and
// the journal has what the CDN sent and what the upstream answered.
func TestProxyBackend(t *testing.T) {
	up := upstream(t)
	e := startEmu(t, Config{Listeners: []ListenerConfig{
		{Name: "front", Profile: HTTP, Proxy: &proxy.Config{URL: up.URL, Host: "origin.example"}},
	}})
	o := synth.Object{Path: "/big", Size: 100 << 20, Version: "up"}

	req, _ := http.NewRequest(http.MethodGet, e.URL("front")+"/big", nil)
	req.Header.Set("X-CDN", "edge-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, err := verifyStream(t, o, resp.Body)
	resp.Body.Close()
	if err != nil || n != o.Size || resp.ContentLength != o.Size {
		t.Fatalf("read %d of %d bytes (Content-Length %d): %v", n, o.Size, resp.ContentLength, err)
	}
	if resp.Header.Get("Etag") != o.ETag() || resp.Header.Get("X-Upstream-Host") != "origin.example" || resp.Header.Get("X-Upstream-Saw") != "edge-1" {
		t.Fatalf("headers %v", resp.Header)
	}
	if len(resp.Header.Values("Date")) != 1 {
		t.Fatalf("Date fields %q, want the upstream's only", resp.Header.Values("Date"))
	}
	r := waitEnded(t, e, journal.Query{PathPrefix: "/big"}, 1)[0]
	if r.End != journal.EndComplete || r.BodyBytes != o.Size || r.Upstream == nil || r.Upstream.Status != 200 ||
		r.Upstream.Host != "origin.example" || headerIndex(r, "x-cdn") < 0 {
		t.Fatalf("journal %+v upstream %+v", r, r.Upstream)
	}

	// A truncation rule applies to the upstream's body.
	const cut = 3 << 20
	mustAdd(t, e, rules.Rule{Match: rules.Match{Path: "/big"}, Action: rules.Action{Truncate: &rules.Cut{AfterBytes: ptr[int64](cut)}}})
	resp, err = http.Get(e.URL("front") + "/big")
	if err != nil {
		t.Fatal(err)
	}
	n, err = verifyStream(t, o, resp.Body)
	resp.Body.Close()
	if n != cut || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("truncated read: %d bytes, err %v; want %d and unexpected EOF", n, err, cut)
	}
	reqs := waitEnded(t, e, journal.Query{PathPrefix: "/big"}, 2)
	if r := reqs[1]; r.End != journal.EndTruncated || r.BodyBytes != cut || r.Upstream == nil || r.Upstream.Status != 200 {
		t.Fatalf("journal of the truncated one: %+v", r)
	}

	// A request body streams upstream.
	put, _ := http.NewRequest(http.MethodPut, e.URL("front")+"/up", io.LimitReader(synth.Object{Path: "/up", Size: 5 << 20}.NewReader(), 5<<20))
	resp, err = http.DefaultClient.Do(put)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("X-Received") != strconv.Itoa(5<<20) {
		t.Fatalf("PUT: %d, upstream received %q", resp.StatusCode, resp.Header.Get("X-Received"))
	}

	// No upstream: 502 naming it, and the journal says why.
	up.Close()
	resp, body, err := get(t, http.DefaultClient, e.URL("front")+"/gone")
	if err != nil || resp.StatusCode != 502 || !strings.Contains(string(body), "upstream") {
		t.Fatalf("upstream down: %v %v %q", resp, err, body)
	}
	if r := waitEnded(t, e, journal.Query{PathPrefix: "/gone"}, 1)[0]; r.Upstream == nil || r.Upstream.Error == "" {
		t.Fatalf("journal %+v", r)
	}
}

// An https upstream, trusted through RootCAs (CAFile in a config file).
func TestProxyHTTPSUpstream(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure "+r.Host)
	}))
	t.Cleanup(up.Close)
	pool := x509.NewCertPool()
	pool.AddCert(up.Certificate())
	e := startEmu(t, Config{Listeners: []ListenerConfig{
		{Name: "front", Profile: H2C, Proxy: &proxy.Config{URL: up.URL, Host: "example.com", RootCAs: pool}},
	}})
	resp, body, err := get(t, clientFor(t, e, "front", ""), e.URL("front")+"/s")
	if err != nil || resp.StatusCode != 200 || string(body) != "secure example.com" {
		t.Fatalf("%v %v %q", resp, err, body)
	}
}

func TestProxyConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  proxy.Config
		want string
	}{
		{proxy.Config{}, "listeners[0].proxy.url: is required"},
		{proxy.Config{URL: "ftp://x"}, "listeners[0].proxy.url: must be http:// or https://"},
		{proxy.Config{URL: "http://"}, "listeners[0].proxy.url: has no host"},
		{proxy.Config{URL: "http://x", Host: "a\r\nb"}, "listeners[0].proxy.host"},
		{proxy.Config{URL: "https://x", CAFile: "/nonexistent.pem"}, "listeners[0].proxy.caFile: cannot be read"},
	} {
		_, err := New(Config{Listeners: []ListenerConfig{{Name: "p", Profile: HTTP, Proxy: &tc.cfg}}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
