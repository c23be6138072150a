package s3emu

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
)

// Multipart upload limits, as S3 has them.
const (
	minPartSize = 5 << 20
	maxPartSize = 5 << 30
	maxParts    = 10000
)

// mpUpload is a multipart upload in progress.
type mpUpload struct {
	id, bucket, key string
	initiated       time.Time
	header          http.Header // the object's headers and metadata, from Create
	checksumAlg     string      // x-amz-checksum-algorithm, lower case, or ""
	checksumType    string      // COMPOSITE or FULL_OBJECT when checksumAlg is set

	mu    sync.Mutex
	parts map[int]*mpPart
}

type mpPart struct {
	size     int64
	md5      []byte
	checksum string // base64, of checksumAlg
	modified time.Time
	blob     *blobstore.Blob
}

func (p *mpPart) etag() string { return `"` + hex.EncodeToString(p.md5) + `"` }

// uploads holds the multipart uploads in progress by upload id.
type uploads struct {
	mu sync.Mutex
	m  map[string]*mpUpload
}

func (u *uploads) get(id, bucket, key string) *mpUpload {
	u.mu.Lock()
	defer u.mu.Unlock()
	up := u.m[id]
	if up == nil || up.bucket != bucket || (key != "" && up.key != key) {
		return nil
	}
	return up
}

func (u *uploads) remove(id string) *mpUpload {
	u.mu.Lock()
	defer u.mu.Unlock()
	up := u.m[id]
	delete(u.m, id)
	return up
}

func errNoSuchUpload(id string) *s3Error {
	return newErr(http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.").with("UploadId", id)
}

// multipart routes the multipart operations; handled is false for a
// request that is none of them.
func (q *request) multipart(query url.Values) (handled bool, e *s3Error) {
	m, key := q.r.Method, q.target.Key
	switch {
	case key == "" && m == http.MethodGet && query.Has("uploads"):
		return true, q.listUploads(query)
	case key == "":
		return false, nil
	case m == http.MethodPost && query.Has("uploads"):
		return true, q.createUpload()
	case !query.Has("uploadId"):
		return false, nil
	}
	id := query.Get("uploadId")
	switch m {
	case http.MethodPut:
		return true, q.uploadPart(id, query)
	case http.MethodPost:
		return true, q.completeUpload(id)
	case http.MethodDelete:
		up := q.s.uploads.get(id, q.target.Bucket, key)
		if up == nil {
			return true, errNoSuchUpload(id)
		}
		q.s.uploads.remove(id)
		up.release()
		q.w.WriteHeader(http.StatusNoContent)
		return true, nil
	case http.MethodGet:
		return true, q.listParts(id, query)
	}
	return false, nil
}

func (up *mpUpload) release() {
	up.mu.Lock()
	defer up.mu.Unlock()
	for _, p := range up.parts {
		p.blob.Release()
	}
	up.parts = map[int]*mpPart{}
}

func (q *request) createUpload() *s3Error {
	h := q.r.Header
	up := &mpUpload{bucket: q.target.Bucket, key: q.target.Key, initiated: q.s.now().UTC(),
		header: requestObjectHeader(h), parts: map[int]*mpPart{}}
	if alg := strings.ToLower(h.Get("X-Amz-Checksum-Algorithm")); alg != "" {
		if !containsStr(checksumAlgs, alg) {
			return newErr(http.StatusBadRequest, "InvalidRequest", "Checksum algorithm %q is not one of CRC32, CRC32C, CRC64NVME, SHA1, SHA256", alg)
		}
		up.checksumAlg, up.checksumType = alg, "COMPOSITE"
		if alg == "crc64nvme" || strings.EqualFold(h.Get("X-Amz-Checksum-Type"), "FULL_OBJECT") {
			up.checksumType = "FULL_OBJECT"
		}
	}
	up.id = base64.RawURLEncoding.EncodeToString([]byte(q.s.newRequestID() + "." + randomHex(8)))
	q.s.uploads.mu.Lock()
	q.s.uploads.m[up.id] = up
	q.s.uploads.mu.Unlock()
	type result struct {
		XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
		XMLNS    string   `xml:"xmlns,attr"`
		Bucket   string
		Key      string
		UploadId string
	}
	if up.checksumAlg != "" {
		q.w.Header().Set("X-Amz-Checksum-Algorithm", strings.ToUpper(up.checksumAlg))
		q.w.Header().Set("X-Amz-Checksum-Type", up.checksumType)
	}
	writeXML(q.w, q.r, result{XMLNS: s3Namespace, Bucket: up.bucket, Key: up.key, UploadId: up.id})
	return nil
}

// partNumber parses partNumber (1-10000).
func partNumber(v string) (int, *s3Error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxParts {
		return 0, newErr(http.StatusBadRequest, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive").with("ArgumentName", "partNumber").with("ArgumentValue", v)
	}
	return n, nil
}

// uploadPart answers UploadPart and UploadPartCopy.
func (q *request) uploadPart(id string, query url.Values) *s3Error {
	up := q.s.uploads.get(id, q.target.Bucket, q.target.Key)
	if up == nil {
		return errNoSuchUpload(id)
	}
	n, e := partNumber(query.Get("partNumber"))
	if e != nil {
		return e
	}
	p := &mpPart{modified: q.s.now().UTC().Truncate(time.Second)}
	var copied bool
	if src := q.r.Header.Get("X-Amz-Copy-Source"); src != "" {
		blob, d, e := q.copySourceBlob(src, q.r.Header.Get("X-Amz-Copy-Source-Range"), up.checksumAlg)
		if e != nil {
			return e
		}
		p.blob, p.md5, p.checksum, copied = blob, d["md5"], d.Base64(up.checksumAlg), true
	} else {
		rec, e := q.receive(q.s.store.blobs, maxPartSize)
		if e != nil {
			return e
		}
		p.blob, p.md5 = rec.blob, rec.digests["md5"]
		if up.checksumAlg != "" {
			p.checksum = rec.digests.Base64(up.checksumAlg)
			if p.checksum == "" {
				rec.blob.Release()
				return newErr(http.StatusBadRequest, "InvalidRequest", "The upload was created using a %s checksum. The part upload request did not include a checksum of that type.", strings.ToUpper(up.checksumAlg))
			}
		}
	}
	p.size = p.blob.Size()
	up.mu.Lock()
	if q.s.uploads.get(id, up.bucket, up.key) == nil {
		up.mu.Unlock()
		p.blob.Release()
		return errNoSuchUpload(id)
	}
	if old := up.parts[n]; old != nil {
		old.blob.Release()
	}
	up.parts[n] = p
	up.mu.Unlock()
	h := q.w.Header()
	if up.checksumAlg != "" {
		h.Set("X-Amz-Checksum-"+strings.ToUpper(up.checksumAlg), p.checksum)
	}
	if copied {
		type result struct {
			XMLName      xml.Name `xml:"CopyPartResult"`
			XMLNS        string   `xml:"xmlns,attr"`
			LastModified string
			ETag         string
		}
		writeXML(q.w, q.r, result{XMLNS: s3Namespace, LastModified: xmlTime(p.modified), ETag: p.etag()})
		return nil
	}
	h.Set("ETag", p.etag())
	h.Set("Content-Length", "0")
	q.w.WriteHeader(http.StatusOK)
	return nil
}

// checksumElems are the Checksum* elements of S3's XML results.
type checksumElems struct {
	ChecksumCRC32     string `xml:",omitempty"`
	ChecksumCRC32C    string `xml:",omitempty"`
	ChecksumCRC64NVME string `xml:",omitempty"`
	ChecksumSHA1      string `xml:",omitempty"`
	ChecksumSHA256    string `xml:",omitempty"`
}

func newChecksumElems(sums map[string]string) checksumElems {
	return checksumElems{sums["crc32"], sums["crc32c"], sums["crc64nvme"], sums["sha1"], sums["sha256"]}
}

func (c checksumElems) get(alg string) string {
	return map[string]string{"crc32": c.ChecksumCRC32, "crc32c": c.ChecksumCRC32C, "crc64nvme": c.ChecksumCRC64NVME, "sha1": c.ChecksumSHA1, "sha256": c.ChecksumSHA256}[alg]
}

type completePart struct {
	PartNumber int
	ETag       string
	checksumElems
}

func (q *request) completeUpload(id string) *s3Error {
	up := q.s.uploads.get(id, q.target.Bucket, q.target.Key)
	if up == nil {
		return errNoSuchUpload(id)
	}
	check, e := writeConditions(q.r.Header)
	if e != nil {
		return e
	}
	raw, e := q.readBody(1 << 20)
	if e != nil {
		return e
	}
	var doc struct {
		XMLName xml.Name       `xml:"CompleteMultipartUpload"`
		Parts   []completePart `xml:"Part"`
	}
	if err := xml.Unmarshal(raw, &doc); err != nil || len(doc.Parts) == 0 {
		return newErr(http.StatusBadRequest, "MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema (a CompleteMultipartUpload with at least one Part).")
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	blobs := make([]*blobstore.Blob, 0, len(doc.Parts))
	md5s := md5.New()
	sums := blobstore.NewHash(up.checksumAlg)
	for i := 1; i < len(doc.Parts); i++ {
		if doc.Parts[i].PartNumber <= doc.Parts[i-1].PartNumber {
			return newErr(http.StatusBadRequest, "InvalidPartOrder", "The list of parts was not in ascending order. The parts list must be specified in order by part number.").with("UploadId", id)
		}
	}
	for i, cp := range doc.Parts {
		p := up.parts[cp.PartNumber]
		if p == nil || strings.Trim(cp.ETag, `"`) != hex.EncodeToString(p.md5) {
			return newErr(http.StatusBadRequest, "InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.").
				with("UploadId", id).with("PartNumber", strconv.Itoa(cp.PartNumber)).with("ETag", cp.ETag)
		}
		if v := cp.get(up.checksumAlg); up.checksumAlg != "" && v != "" && v != p.checksum {
			return newErr(http.StatusBadRequest, "InvalidPart", "The checksum of part %d does not match the one it was uploaded with.", cp.PartNumber).with("UploadId", id).with("PartNumber", strconv.Itoa(cp.PartNumber))
		}
		if i < len(doc.Parts)-1 && p.size < minPartSize {
			return newErr(http.StatusBadRequest, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.").
				with("ProposedSize", strconv.FormatInt(p.size, 10)).with("MinSizeAllowed", strconv.Itoa(minPartSize)).with("PartNumber", strconv.Itoa(cp.PartNumber)).with("ETag", p.etag())
		}
		md5s.Write(p.md5)
		if sums != nil && p.checksum != "" {
			rawSum, _ := base64.StdEncoding.DecodeString(p.checksum)
			sums.Write(rawSum)
		}
		blobs = append(blobs, p.blob)
	}
	var digests []string
	if up.checksumType == "FULL_OBJECT" {
		digests = []string{up.checksumAlg}
	}
	blob, d, err := q.s.store.blobs.Concat(blobs, digests...)
	if err != nil {
		return storeError(err)
	}
	n := len(doc.Parts)
	o := &object{Key: up.key, Size: blob.Size(), ETag: `"` + hex.EncodeToString(md5s.Sum(nil)) + "-" + strconv.Itoa(n) + `"`,
		Modified: q.s.now().UTC().Truncate(time.Second), Header: up.header, blob: blob}
	switch up.checksumType {
	case "FULL_OBJECT":
		o.Checksums, o.ChecksumType = map[string]string{up.checksumAlg: d.Base64(up.checksumAlg)}, "FULL_OBJECT"
	case "COMPOSITE":
		o.Checksums = map[string]string{up.checksumAlg: base64.StdEncoding.EncodeToString(sums.Sum(nil)) + "-" + strconv.Itoa(n)}
		o.ChecksumType = "COMPOSITE"
	}
	if err := q.s.store.put(up.bucket, o, check); err != nil {
		return asS3Error(err)
	}
	// Completed: the parts' bytes are in the object now.
	q.s.uploads.remove(id)
	for _, p := range up.parts {
		p.blob.Release()
	}
	up.parts = map[int]*mpPart{}
	type result struct {
		XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
		XMLNS    string   `xml:"xmlns,attr"`
		Location string
		Bucket   string
		Key      string
		ETag     string
		checksumElems
		ChecksumType string `xml:",omitempty"`
	}
	setChecksumHeaders(q.w.Header(), o)
	writeXML(q.w, q.r, result{XMLNS: s3Namespace, Location: "/" + up.bucket + "/" + up.key, Bucket: up.bucket, Key: up.key, ETag: o.ETag,
		checksumElems: newChecksumElems(o.Checksums), ChecksumType: o.ChecksumType})
	return nil
}

func (q *request) listParts(id string, query url.Values) *s3Error {
	up := q.s.uploads.get(id, q.target.Bucket, q.target.Key)
	if up == nil {
		return errNoSuchUpload(id)
	}
	maxP, marker := 1000, 0
	if v := query.Get("max-parts"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return newErr(http.StatusBadRequest, "InvalidArgument", "Provided max-parts not an integer or within integer range").with("ArgumentName", "max-parts").with("ArgumentValue", v)
		}
		maxP = min(n, 1000)
	}
	if v := query.Get("part-number-marker"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return newErr(http.StatusBadRequest, "InvalidArgument", "Provided part-number-marker not an integer").with("ArgumentName", "part-number-marker").with("ArgumentValue", v)
		}
		marker = n
	}
	type part struct {
		PartNumber   int
		LastModified string
		ETag         string
		Size         int64
		checksumElems
	}
	type result struct {
		XMLName              xml.Name `xml:"ListPartsResult"`
		XMLNS                string   `xml:"xmlns,attr"`
		Bucket, Key          string
		UploadId             string
		PartNumberMarker     int
		NextPartNumberMarker int
		MaxParts             int
		IsTruncated          bool
		StorageClass         string
		Parts                []part `xml:"Part"`
	}
	res := result{XMLNS: s3Namespace, Bucket: up.bucket, Key: up.key, UploadId: id, PartNumberMarker: marker, MaxParts: maxP, StorageClass: "STANDARD"}
	up.mu.Lock()
	nums := make([]int, 0, len(up.parts))
	for n := range up.parts {
		if n > marker {
			nums = append(nums, n)
		}
	}
	sort.Ints(nums)
	for _, n := range nums {
		if len(res.Parts) == maxP {
			res.IsTruncated = true
			break
		}
		p := up.parts[n]
		pp := part{PartNumber: n, LastModified: xmlTime(p.modified), ETag: p.etag(), Size: p.size}
		if up.checksumAlg != "" {
			pp.checksumElems = newChecksumElems(map[string]string{up.checksumAlg: p.checksum})
		}
		res.Parts = append(res.Parts, pp)
		res.NextPartNumberMarker = n
	}
	up.mu.Unlock()
	writeXML(q.w, q.r, res)
	return nil
}

func (q *request) listUploads(query url.Values) *s3Error {
	prefix := query.Get("prefix")
	maxU := 1000
	if v := query.Get("max-uploads"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return newErr(http.StatusBadRequest, "InvalidArgument", "Provided max-uploads not an integer or within integer range").with("ArgumentName", "max-uploads").with("ArgumentValue", v)
		}
		maxU = min(n, 1000)
	}
	keyMarker, idMarker := query.Get("key-marker"), query.Get("upload-id-marker")
	type upload struct {
		Key          string
		UploadId     string
		Initiated    string
		StorageClass string
	}
	type result struct {
		XMLName            xml.Name `xml:"ListMultipartUploadsResult"`
		XMLNS              string   `xml:"xmlns,attr"`
		Bucket             string
		KeyMarker          string
		UploadIdMarker     string
		NextKeyMarker      string
		NextUploadIdMarker string
		Prefix             string
		MaxUploads         int
		IsTruncated        bool
		Uploads            []upload `xml:"Upload"`
	}
	res := result{XMLNS: s3Namespace, Bucket: q.target.Bucket, KeyMarker: keyMarker, UploadIdMarker: idMarker, Prefix: prefix, MaxUploads: maxU}
	q.s.uploads.mu.Lock()
	var ups []*mpUpload
	for _, up := range q.s.uploads.m {
		if up.bucket == q.target.Bucket && strings.HasPrefix(up.key, prefix) &&
			(up.key > keyMarker || up.key == keyMarker && idMarker != "" && up.id > idMarker) {
			ups = append(ups, up)
		}
	}
	q.s.uploads.mu.Unlock()
	sort.Slice(ups, func(i, j int) bool {
		if ups[i].key != ups[j].key {
			return ups[i].key < ups[j].key
		}
		return ups[i].id < ups[j].id
	})
	for _, up := range ups {
		if len(res.Uploads) == maxU {
			res.IsTruncated = true
			break
		}
		res.Uploads = append(res.Uploads, upload{up.key, up.id, xmlTime(up.initiated), "STANDARD"})
		res.NextKeyMarker, res.NextUploadIdMarker = up.key, up.id
	}
	writeXML(q.w, q.r, res)
	return nil
}
