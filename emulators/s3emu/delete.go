package s3emu

import (
	"encoding/xml"
	"net/http"
)

// maxDeleteKeys is DeleteObjects' limit per request.
const maxDeleteKeys = 1000

// deleteObjects answers DeleteObjects (POST ?delete): every key is deleted
// (a missing key counts as deleted, as in S3); verbose results list each
// deleted key, quiet ones only the errors.
func (q *request) deleteObjects() *s3Error {
	if q.r.Header.Get("Content-MD5") == "" && len(q.checksumAlgorithms()) == 0 {
		return newErr(http.StatusBadRequest, "InvalidRequest", "Missing required header for this request: Content-MD5 or x-amz-checksum-*")
	}
	raw, e := q.readBody(2 << 20)
	if e != nil {
		return e
	}
	var doc struct {
		XMLName xml.Name `xml:"Delete"`
		Quiet   bool     `xml:"Quiet"`
		Objects []struct {
			Key       string `xml:"Key"`
			VersionID string `xml:"VersionId"`
		} `xml:"Object"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil || len(doc.Objects) == 0 || len(doc.Objects) > maxDeleteKeys {
		return newErr(http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema (a Delete with 1 to 1000 Object elements).")
	}
	type deleted struct {
		Key string
	}
	type failed struct {
		Key, Code, Message string
	}
	type result struct {
		XMLName xml.Name  `xml:"DeleteResult"`
		XMLNS   string    `xml:"xmlns,attr"`
		Deleted []deleted `xml:"Deleted"`
		Errors  []failed  `xml:"Error"`
	}
	res := result{XMLNS: s3Namespace}
	for _, o := range doc.Objects {
		switch {
		case o.Key == "":
			res.Errors = append(res.Errors, failed{o.Key, "InvalidArgument", "An object key is empty."})
		case o.VersionID != "" && o.VersionID != "null":
			res.Errors = append(res.Errors, failed{o.Key, "NotImplemented", "Deleting a version (VersionId) is not implemented: buckets are unversioned."})
		default:
			if err := q.s.store.remove(q.target.Bucket, o.Key); err != nil {
				res.Errors = append(res.Errors, failed{o.Key, "InternalError", err.Error()})
			} else if !doc.Quiet {
				res.Deleted = append(res.Deleted, deleted{o.Key})
			}
		}
	}
	writeXML(q.w, q.r, res)
	return nil
}
