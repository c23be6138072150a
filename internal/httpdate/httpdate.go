// Package httpdate parses and formats HTTP dates (RFC 9110 5.6.7) without
// time.Parse's and time.Format's per-call costs: the reference edge reads
// Date and Last-Modified on every cache hit (issue #14). Parse accepts
// exactly what http.ParseTime accepts, answering the preferred
// IMF-fixdate form itself and handing the obsolete forms to
// http.ParseTime; Append writes IMF-fixdate as http.TimeFormat does.
package httpdate

import (
	"net/http"
	"time"
)

// imfLen is the length of an IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
const imfLen = len("Sun, 06 Nov 1994 08:49:37 GMT")

var days = [7]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}

var months = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// Parse is http.ParseTime(s), in UTC.
func Parse(s string) (time.Time, error) {
	if t, ok := parseIMF(s); ok {
		return t, nil
	}
	return http.ParseTime(s)
}

// parseIMF parses a well-formed IMF-fixdate whose day name matches its
// date; anything else (including a value time.Parse would accept, such as
// a wrong day name) is left to http.ParseTime, so the two agree.
func parseIMF(s string) (time.Time, bool) {
	if len(s) != imfLen || s[3] != ',' || s[4] != ' ' || s[7] != ' ' || s[11] != ' ' ||
		s[16] != ' ' || s[19] != ':' || s[22] != ':' || s[25:] != " GMT" {
		return time.Time{}, false
	}
	day, ok1 := digits(s[5:7])
	year, ok2 := digits(s[12:16])
	hour, ok3 := digits(s[17:19])
	minute, ok4 := digits(s[20:22])
	sec, ok5 := digits(s[23:25])
	month := 0
	for i, m := range months {
		if s[8:11] == m {
			month = i + 1
		}
	}
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || month == 0 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC)
	if t.Day() != day || days[t.Weekday()] != s[:3] { // 31 Feb normalises; leave it to time.Parse
		return time.Time{}, false
	}
	return t, true
}

func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// Append appends t in UTC as an IMF-fixdate (http.TimeFormat) to b. A
// year outside 0-9999 is formatted by time.Format.
func Append(b []byte, t time.Time) []byte {
	t = t.UTC()
	yy, mm, dd := t.Date()
	if yy < 0 || yy > 9999 {
		return t.AppendFormat(b, http.TimeFormat)
	}
	hh, mn, ss := t.Clock()
	b = append(b, days[t.Weekday()]...)
	b = append(b, ", "...)
	b = append2(b, dd)
	b = append(b, ' ')
	b = append(b, months[mm-1]...)
	b = append(b, ' ')
	b = append2(b, yy/100)
	b = append2(b, yy%100)
	b = append(b, ' ')
	b = append2(b, hh)
	b = append(b, ':')
	b = append2(b, mn)
	b = append(b, ':')
	b = append2(b, ss)
	return append(b, " GMT"...)
}

// Format is t as an IMF-fixdate.
func Format(t time.Time) string {
	var buf [imfLen]byte
	return string(Append(buf[:0], t))
}

func append2(b []byte, n int) []byte { return append(b, byte('0'+n/10), byte('0'+n%10)) }
