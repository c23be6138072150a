package gcsemu

import (
	"encoding/xml"
	"net/http"
	"strconv"
)

// xmlList answers GET /BUCKET (or GET / on a bucket host): the XML API's
// ListBucketResult with prefix, delimiter, marker and max-keys.
func (s *Server) xmlList(w http.ResponseWriter, r *http.Request, name string) {
	b := s.store.bucket(name)
	if err := s.authorize(r, b, accessRead); err != nil {
		writeXMLError(w, r, err)
		return
	}
	q := r.URL.Query()
	max := 1000
	if v := q.Get("max-keys"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeXMLError(w, r, errBadRequest("invalid max-keys %q", v))
			return
		}
		max = min(n, 1000)
	}
	l, err := s.store.list(name, q.Get("prefix"), q.Get("delimiter"), q.Get("marker"), "", "", max)
	if err != nil {
		writeXMLError(w, r, err)
		return
	}
	type content struct {
		Key          string `xml:"Key"`
		Generation   int64  `xml:"Generation"`
		LastModified string `xml:"LastModified"`
		ETag         string `xml:"ETag"`
		Size         int64  `xml:"Size"`
	}
	type prefix struct {
		Prefix string `xml:"Prefix"`
	}
	out := struct {
		XMLName     xml.Name  `xml:"ListBucketResult"`
		Xmlns       string    `xml:"xmlns,attr"`
		Name        string    `xml:"Name"`
		Prefix      string    `xml:"Prefix"`
		Marker      string    `xml:"Marker"`
		NextMarker  string    `xml:"NextMarker,omitempty"`
		IsTruncated bool      `xml:"IsTruncated"`
		Contents    []content `xml:"Contents"`
		Prefixes    []prefix  `xml:"CommonPrefixes"`
	}{Xmlns: "http://doc.s3.amazonaws.com/2006-03-01", Name: name, Prefix: q.Get("prefix"), Marker: q.Get("marker"),
		NextMarker: l.next, IsTruncated: l.next != ""}
	for _, o := range l.items {
		out.Contents = append(out.Contents, content{o.name, o.generation, o.created.UTC().Format("2006-01-02T15:04:05.000Z"), o.etag(), o.size})
	}
	for _, p := range l.prefixes {
		out.Prefixes = append(out.Prefixes, prefix{p})
	}
	body, _ := xml.Marshal(out)
	h := w.Header()
	h.Set("Content-Type", "application/xml; charset=UTF-8")
	h.Set("Cache-Control", "private, max-age=0")
	if r.Method == http.MethodHead {
		return
	}
	w.Write([]byte(xml.Header))
	w.Write(body)
}
