package requri

import (
	"math/rand/v2"
	"net/url"
	"reflect"
	"testing"
)

// same fails unless Parse(s) is exactly url.ParseRequestURI(s).
func same(t *testing.T, s string) {
	t.Helper()
	got, gotErr := Parse(s)
	want, wantErr := url.ParseRequestURI(s)
	if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse(%q) = %#v, %v; url.ParseRequestURI: %#v, %v", s, got, gotErr, want, wantErr)
	}
	if gotErr == nil && got.RequestURI() != want.RequestURI() {
		t.Fatalf("Parse(%q).RequestURI() = %q, want %q", s, got.RequestURI(), want.RequestURI())
	}
}

func TestParseIsParseRequestURI(t *testing.T) {
	for _, s := range []string{
		"/", "/pass/1k.bin", "//double", "/a/./b/../c", "/~user/x_y-z.v1",
		"", "*", "x", "a/b", "/a b", "/a?b=c", "/a#f", "/a%20b", "/a%zz", "/a;p", "/a:b", "/@x",
		"/a!b", "/a$b", "/a'b", "/a(b)", "/a*b", "/a+b", "/a,b", "/a=b", "/é", "/a\x00b", "/a\x7f",
		"http://h/x", "//h/x?y", "/x?", "/?",
	} {
		same(t, s)
	}
	// Random targets over an alphabet mixing plain and special characters.
	const alphabet = "/aZ09-._~ ?#%:@!$&'()*+,;=\x00\x7f\xc3\xa9"
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, 1+r.IntN(12))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		if r.IntN(2) == 0 {
			b[0] = '/'
		}
		same(t, string(b))
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"/", "/pass/1k.bin", "/a?b", "/a%41", "//x", "*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { same(t, s) })
}

func BenchmarkParse(b *testing.B) {
	for _, s := range []string{"/pass/1k.bin", "/pass/1k.bin?x=1"} {
		b.Run(s, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
