package gcsemu

import (
	"net/http"
	"net/url"
	"time"
)

// objectResource is the JSON API's object metadata.
type objectResource struct {
	Kind           string `json:"kind"`
	ID             string `json:"id"`
	SelfLink       string `json:"selfLink"`
	MediaLink      string `json:"mediaLink"`
	Name           string `json:"name"`
	Bucket         string `json:"bucket"`
	Generation     string `json:"generation"`
	Metageneration string `json:"metageneration"`
	ContentType    string `json:"contentType"`
	StorageClass   string `json:"storageClass"`
	Size           string `json:"size"`
	MD5Hash        string `json:"md5Hash"`
	CRC32C         string `json:"crc32c"`
	ETag           string `json:"etag"`
	TimeCreated    string `json:"timeCreated"`
	Updated        string `json:"updated"`
	TimeStorage    string `json:"timeStorageClassUpdated"`
	CacheControl   string `json:"cacheControl,omitempty"`

	ContentDisposition string            `json:"contentDisposition,omitempty"`
	ContentEncoding    string            `json:"contentEncoding,omitempty"`
	ContentLanguage    string            `json:"contentLanguage,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
}

// bucketResource is the JSON API's bucket metadata.
type bucketResource struct {
	Kind           string `json:"kind"`
	ID             string `json:"id"`
	SelfLink       string `json:"selfLink"`
	Name           string `json:"name"`
	ProjectNumber  string `json:"projectNumber"`
	Metageneration string `json:"metageneration"`
	Location       string `json:"location"`
	LocationType   string `json:"locationType"`
	StorageClass   string `json:"storageClass"`
	ETag           string `json:"etag"`
	TimeCreated    string `json:"timeCreated"`
	Updated        string `json:"updated"`
}

func rfc3339(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// baseURL is the scheme and host the request reached.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func newObjectResource(r *http.Request, b *bucket, o *object) objectResource {
	path := "b/" + url.PathEscape(o.bucket) + "/o/" + url.PathEscape(o.name)
	base := baseURL(r)
	return objectResource{
		Kind:           "storage#object",
		ID:             o.bucket + "/" + o.name + "/" + itoa(o.generation),
		SelfLink:       base + "/storage/v1/" + path,
		MediaLink:      base + "/download/storage/v1/" + path + "?generation=" + itoa(o.generation) + "&alt=media",
		Name:           o.name,
		Bucket:         o.bucket,
		Generation:     itoa(o.generation),
		Metageneration: itoa(o.metageneration),
		ContentType:    o.contentTypeOr(),
		StorageClass:   "STANDARD",
		Size:           itoa(o.size),
		MD5Hash:        o.md5Base64(),
		CRC32C:         o.crc32cBase64(),
		ETag:           o.jsonETag(),
		TimeCreated:    rfc3339(o.created),
		Updated:        rfc3339(o.updatedOr()),
		TimeStorage:    rfc3339(o.created),
		CacheControl:   cacheControl(b, o),

		ContentDisposition: o.contentDisposition,
		ContentEncoding:    o.contentEncoding,
		ContentLanguage:    o.contentLanguage,
		Metadata:           o.metadata,
	}
}

func newBucketResource(r *http.Request, b *bucket) bucketResource {
	return bucketResource{
		Kind:           "storage#bucket",
		ID:             b.name,
		SelfLink:       baseURL(r) + "/storage/v1/b/" + url.PathEscape(b.name),
		Name:           b.name,
		ProjectNumber:  "0",
		Metageneration: "1",
		Location:       "US",
		LocationType:   "multi-region",
		StorageClass:   "STANDARD",
		ETag:           "CAE=",
		TimeCreated:    rfc3339(b.created),
		Updated:        rfc3339(b.created),
	}
}
