package gcsemu

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"

	"github.com/edgeconform/edgeconform/emulators/synth"
)

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func newClient(t *testing.T, url, token string, extra ...option.ClientOption) *storage.Client {
	t.Helper()
	opts := []option.ClientOption{option.WithEndpoint(url + "/storage/v1/")}
	if token == "" {
		opts = append(opts, option.WithoutAuthentication())
	} else {
		opts = append(opts, option.WithHTTPClient(&http.Client{Transport: bearer{token}}))
	}
	c, err := storage.NewClient(context.Background(), append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func writeObject(t *testing.T, obj *storage.ObjectHandle, data []byte, chunk int, ctype string) *storage.ObjectAttrs {
	t.Helper()
	w := obj.NewWriter(context.Background())
	w.ChunkSize = chunk
	w.ContentType = ctype
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("writing %s (chunk %d): %v", obj.ObjectName(), chunk, err)
	}
	return w.Attrs()
}

// readAll returns a function reading a whole Reader (so it can take
// NewReader's two results directly).
func readAll(t *testing.T) func(*storage.Reader, error) []byte {
	t.Helper()
	return func(r *storage.Reader, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

// The real Go client writes (multipart, single-chunk and multi-chunk
// resumable), reads (XML and JSON, whole with its CRC32C check, and
// ranges), lists and deletes.
func TestGoClient(t *testing.T) {
	srv, err := New(testConfig())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		switch {
		case q.Get("upload_id") != "":
			seen["chunk"]++
		case q.Get("uploadType") != "":
			seen[q.Get("uploadType")]++
		case q.Get("alt") == "media":
			seen["json-media"]++
		case strings.HasPrefix(r.URL.Path, "/"+pubBucket+"/"):
			seen["xml"]++
		}
		mu.Unlock()
		srv.ServeHTTP(w, r)
	}))
	ctx := context.Background()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		t.Logf("requests: %v", seen)
		if seen["multipart"] == 0 || seen["resumable"] < 2 || seen["chunk"] < 13 || seen["json-media"] == 0 || seen["xml"] == 0 {
			t.Errorf("not every upload and read path was used: %v", seen)
		}
	}()
	for _, reads := range []string{"xml", "json"} {
		t.Run(reads, func(t *testing.T) {
			var extra []option.ClientOption
			if reads == "json" {
				extra = append(extra, storage.WithJSONReads())
			}
			c := newClient(t, url, goodToken, extra...)
			bkt := c.Bucket(pubBucket)
			small := []byte("small object body")
			big := synth.Object{Path: "big", Size: 3<<20 + 12345, Version: "1"}.Bytes()
			prefix := reads + "/"
			cases := []struct {
				name  string
				data  []byte
				chunk int
			}{
				{prefix + "small", small, 0},                 // multipart
				{prefix + "sub/one-chunk", small, 256 << 10}, // resumable, one chunk
				{prefix + "sub/big", big, 256 << 10},         // resumable, many chunks
				{prefix + "weird name %2F?#&+ é", small, 0},  // escaping
			}
			for _, tc := range cases {
				attrs := writeObject(t, bkt.Object(tc.name), tc.data, tc.chunk, "application/x-test")
				if attrs.Size != int64(len(tc.data)) || attrs.CRC32C != crc32.Checksum(tc.data, castagnoli) || attrs.Generation == 0 {
					t.Fatalf("%s: attrs %+v", tc.name, attrs)
				}
				got := readAll(t)(bkt.Object(tc.name).NewReader(ctx))
				if !bytes.Equal(got, tc.data) {
					t.Fatalf("%s: read back %d bytes, want %d", tc.name, len(got), len(tc.data))
				}
				a, err := bkt.Object(tc.name).Attrs(ctx)
				if err != nil || a.Size != int64(len(tc.data)) || a.ContentType != "application/x-test" || a.Name != tc.name || a.Generation != attrs.Generation {
					t.Fatalf("%s: Attrs %+v %v", tc.name, a, err)
				}
			}
			got := readAll(t)(bkt.Object(prefix+"sub/big").NewRangeReader(ctx, 1<<20, 1000))
			if !bytes.Equal(got, big[1<<20:1<<20+1000]) {
				t.Fatal("range read differs")
			}
			got = readAll(t)(bkt.Object(prefix+"sub/big").NewRangeReader(ctx, int64(len(big))-10, -1))
			if !bytes.Equal(got, big[len(big)-10:]) {
				t.Fatal("tail range read differs")
			}
			// Configured synthetic object.
			want := synth.Object{Path: "/" + pubBucket + "/dir/synthetic.bin", Size: 100000, Version: "1"}.Bytes()
			if got := readAll(t)(bkt.Object("dir/synthetic.bin").NewReader(ctx)); !bytes.Equal(got, want) {
				t.Fatal("synthetic object differs")
			}

			// List with a delimiter, one page at a time.
			var names, prefixes []string
			it := bkt.Objects(ctx, &storage.Query{Prefix: prefix, Delimiter: "/"})
			for {
				a, err := it.Next()
				if errors.Is(err, iterator.Done) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if a.Prefix != "" {
					prefixes = append(prefixes, a.Prefix)
				} else {
					names = append(names, a.Name)
				}
			}
			if !slices.Equal(names, []string{prefix + "small", prefix + "weird name %2F?#&+ é"}) || !slices.Equal(prefixes, []string{prefix + "sub/"}) {
				t.Fatalf("list: %q %q", names, prefixes)
			}
			// Small pages.
			it = bkt.Objects(ctx, &storage.Query{Prefix: prefix})
			it.PageInfo().MaxSize = 1
			n := 0
			for {
				_, err := it.Next()
				if errors.Is(err, iterator.Done) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if n != len(cases) {
				t.Fatalf("paged list: %d objects, want %d", n, len(cases))
			}

			// Delete.
			if err := bkt.Object(prefix + "small").Delete(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := bkt.Object(prefix + "small").NewReader(ctx); !errors.Is(err, storage.ErrObjectNotExist) {
				t.Fatalf("read after delete: %v", err)
			}
			if _, err := bkt.Object(prefix + "small").Attrs(ctx); !errors.Is(err, storage.ErrObjectNotExist) {
				t.Fatalf("attrs after delete: %v", err)
			}
			// Preconditions.
			_, err := bkt.Object(prefix + "sub/one-chunk").If(storage.Conditions{GenerationMatch: 1}).NewReader(ctx)
			if err == nil {
				t.Fatal("read with a wrong generation condition succeeded")
			}
			w := bkt.Object(prefix + "sub/one-chunk").If(storage.Conditions{DoesNotExist: true}).NewWriter(ctx)
			w.Write(small)
			if err := w.Close(); err == nil {
				t.Fatal("DoesNotExist write over an existing object succeeded")
			}
		})
	}
}

// Private buckets: the client with a token reads; anonymous fails.
func TestGoClientPrivate(t *testing.T) {
	_, url := newTestServer(t, testConfig())
	ctx := context.Background()
	got := readAll(t)(newClient(t, url, goodToken).Bucket(privBucket).Object("secret.txt").NewReader(ctx))
	if string(got) != "top secret" {
		t.Fatalf("private read: %q", got)
	}
	if _, err := newClient(t, url, "").Bucket(privBucket).Object("secret.txt").NewReader(ctx); err == nil {
		t.Fatal("anonymous private read succeeded")
	}
	if _, err := newClient(t, url, "wrong").Bucket(privBucket).Object("secret.txt").Attrs(ctx); err == nil {
		t.Fatal("bad-token Attrs succeeded")
	}
	// Public: anonymous reads, but no anonymous writes while tokens exist.
	anon := newClient(t, url, "")
	if got := readAll(t)(anon.Bucket(pubBucket).Object("hello.txt").NewReader(ctx)); string(got) != "hello, world\n" {
		t.Fatalf("anonymous public read: %q", got)
	}
	w := anon.Bucket(pubBucket).Object("x").NewWriter(ctx)
	w.Write([]byte("x"))
	if err := w.Close(); err == nil {
		t.Fatal("anonymous write succeeded")
	}
	if _, err := anon.Bucket(pubBucket).Attrs(ctx); err != nil {
		t.Fatalf("bucket attrs: %v", err)
	}
}
