package s3emu

import (
	"encoding/base64"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

type listEntry struct {
	Key          string
	LastModified string
	ETag         string
	Size         int64
	StorageClass string
}

type listPrefix struct {
	Prefix string
}

// listResult is ListObjectsV2's (and V1's) ListBucketResult.
type listResult struct {
	XMLName               xml.Name     `xml:"ListBucketResult"`
	XMLNS                 string       `xml:"xmlns,attr"`
	Name                  string       `xml:"Name"`
	Prefix                string       `xml:"Prefix"`
	Marker                *string      `xml:"Marker,omitempty"`
	NextMarker            string       `xml:"NextMarker,omitempty"`
	KeyCount              *int         `xml:"KeyCount,omitempty"`
	MaxKeys               int          `xml:"MaxKeys"`
	Delimiter             string       `xml:"Delimiter,omitempty"`
	EncodingType          string       `xml:"EncodingType,omitempty"`
	IsTruncated           bool         `xml:"IsTruncated"`
	Contents              []listEntry  `xml:"Contents"`
	CommonPrefixes        []listPrefix `xml:"CommonPrefixes"`
	ContinuationToken     string       `xml:"ContinuationToken,omitempty"`
	NextContinuationToken string       `xml:"NextContinuationToken,omitempty"`
	StartAfter            string       `xml:"StartAfter,omitempty"`
}

// list answers ListObjectsV2 (list-type=2) and ListObjects (V1).
func (q *request) list(query url.Values) *s3Error {
	v2 := query.Get("list-type") == "2"
	prefix, delim := query.Get("prefix"), query.Get("delimiter")
	maxKeys := 1000
	if mk := query.Get("max-keys"); mk != "" {
		n, err := strconv.Atoi(mk)
		if err != nil || n < 0 {
			return newErr(http.StatusBadRequest, "InvalidArgument", "Provided max-keys not an integer or within integer range").with("ArgumentName", "max-keys").with("ArgumentValue", mk)
		}
		maxKeys = min(n, 1000)
	}
	enc := query.Get("encoding-type")
	if enc != "" && enc != "url" {
		return newErr(http.StatusBadRequest, "InvalidArgument", "Invalid Encoding Method specified in Request").with("ArgumentName", "encoding-type").with("ArgumentValue", enc)
	}
	encode := func(s string) string {
		if enc == "url" {
			return uriEncode(s, false)
		}
		return s
	}
	// after is the marker: entries up to and including it were returned;
	// if it is a common prefix, every key under it was.
	after, afterIsPrefix := "", false
	res := listResult{XMLNS: s3Namespace, Name: q.target.Bucket, Prefix: encode(prefix), Delimiter: encode(delim), MaxKeys: maxKeys, EncodingType: enc}
	if v2 {
		after = query.Get("start-after")
		res.StartAfter = encode(after)
		if tok := query.Get("continuation-token"); tok != "" {
			raw, err := base64.RawURLEncoding.DecodeString(tok)
			if err != nil || len(raw) == 0 || (raw[0] != 'k' && raw[0] != 'p') {
				return newErr(http.StatusBadRequest, "InvalidArgument", "The continuation token provided is incorrect").with("ArgumentName", "continuation-token")
			}
			after, afterIsPrefix = string(raw[1:]), raw[0] == 'p'
			res.ContinuationToken = tok
		}
	} else {
		after = query.Get("marker")
		m := encode(after)
		res.Marker = &m
		if delim != "" && strings.HasSuffix(after, delim) {
			afterIsPrefix = true
		}
	}
	objs, ok := q.s.store.sorted(q.target.Bucket)
	if !ok {
		return errNoSuchBucket(q.target.Bucket)
	}
	count, last, lastIsPrefix := 0, "", false
	for _, o := range objs {
		if !strings.HasPrefix(o.Key, prefix) || o.Key <= after || afterIsPrefix && strings.HasPrefix(o.Key, after) {
			continue
		}
		entry, isPrefix := o.Key, false
		if delim != "" {
			if i := strings.Index(o.Key[len(prefix):], delim); i >= 0 {
				entry, isPrefix = o.Key[:len(prefix)+i+len(delim)], true
				if lastIsPrefix && entry == last {
					continue
				}
			}
		}
		if count == maxKeys {
			res.IsTruncated = true
			break
		}
		count++
		last, lastIsPrefix = entry, isPrefix
		if isPrefix {
			res.CommonPrefixes = append(res.CommonPrefixes, listPrefix{encode(entry)})
			continue
		}
		res.Contents = append(res.Contents, listEntry{Key: encode(o.Key), LastModified: xmlTime(o.Modified), ETag: o.ETag, Size: o.Size, StorageClass: "STANDARD"})
	}
	if res.IsTruncated {
		kind := "k"
		if lastIsPrefix {
			kind = "p"
		}
		if v2 {
			res.NextContinuationToken = base64.RawURLEncoding.EncodeToString([]byte(kind + last))
		} else if delim != "" {
			res.NextMarker = encode(last)
		}
	}
	if v2 {
		res.KeyCount = &count
	}
	writeXML(q.w, q.r, res)
	return nil
}
