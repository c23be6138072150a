package httpdate

import (
	"net/http"
	"testing"
	"time"
)

func TestParseAgreesWithNetHTTP(t *testing.T) {
	for _, s := range []string{
		"Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
		"Sunday, 06-Nov-94 08:49:37 GMT", // RFC 850
		"Sun Nov  6 08:49:37 1994",       // asctime
		"Mon, 06 Nov 1994 08:49:37 GMT",  // wrong day name
		"Sun, 31 Feb 1994 08:49:37 GMT",  // no such day
		"Sun, 06 Nov 1994 24:00:00 GMT",
		"Sun, 06 Nov 1994 08:60:37 GMT",
		"Sun, 06 Foo 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 08:49:37 UTC",
		"Sun, 6 Nov 1994 08:49:37 GMT",
		"Sun, 06 Nov 1994 08:49:37 GMT ",
		"Sun, 0x Nov 1994 08:49:37 GMT",
		"Tue, 29 Feb 2028 23:59:59 GMT",
		"Thu, 01 Jan 1970 00:00:00 GMT",
		"",
		"0",
	} {
		want, werr := http.ParseTime(s)
		got, gerr := Parse(s)
		if (werr == nil) != (gerr == nil) || !got.Equal(want) {
			t.Errorf("Parse(%q) = %v, %v; http.ParseTime: %v, %v", s, got, gerr, want, werr)
		}
	}
}

func TestAppendIsTimeFormat(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC),
		time.Date(2026, 12, 2, 1, 2, 3, 999, time.FixedZone("X", 3600)),
		time.Unix(0, 0),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(5, 3, 4, 0, 0, 0, 0, time.UTC),
	} {
		if got, want := Format(tm), tm.UTC().Format(http.TimeFormat); got != want {
			t.Errorf("Format(%v) = %q, want %q", tm, got, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("Sun, 06 Nov 1994 08:49:37 GMT")
	f.Add("Sunday, 06-Nov-94 08:49:37 GMT")
	f.Fuzz(func(t *testing.T, s string) {
		want, werr := http.ParseTime(s)
		got, gerr := Parse(s)
		if (werr == nil) != (gerr == nil) || !got.Equal(want) {
			t.Fatalf("Parse(%q) = %v, %v; http.ParseTime: %v, %v", s, got, gerr, want, werr)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	for _, fn := range []struct {
		name string
		f    func(string) (time.Time, error)
	}{{"httpdate", Parse}, {"net/http", http.ParseTime}} {
		b.Run(fn.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := fn.f("Sun, 06 Nov 1994 08:49:37 GMT"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
