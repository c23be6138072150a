// Package gcsemu is a Google Cloud Storage-style bucket service as an
// http.Handler, meant to sit behind an originemu listener (as its Backend) so
// a CDN's gs:// origin can be tested on real sockets with the emulator's
// rules, faults and journal around it.
//
// It speaks two dialects of the service:
//
//   - the XML API: virtual-hosted GET/HEAD/PUT https://BUCKET.<HostSuffix>/OBJECT
//     (with AnyHost, any Host whose first label is a configured bucket) and
//     path style /BUCKET/OBJECT on any other host;
//   - the JSON API, enough for cloud.google.com/go/storage: object metadata,
//     alt=media downloads (also under /download/storage/v1/), listing with
//     prefix/delimiter/pages, bucket metadata, delete, and uploads by
//     uploadType=media, multipart and resumable.
//
// Responses carry the headers Cloud Storage sends: x-goog-generation,
// x-goog-metageneration, x-goog-hash (crc32c and md5), x-goog-stored-*,
// a quoted hex-MD5 ETag, Last-Modified and always Cache-Control (BKT-5):
// "public, max-age=3600" for public buckets and "private, max-age=0" for
// private ones unless the object sets its own.
//
// Authentication. Requests may carry "Authorization: Bearer TOKEN"; a token
// listed in Config.Tokens is accepted. The choice, as Cloud Storage does it:
//
//   - a request presenting a token that is not accepted gets 401 with
//     "WWW-Authenticate: Bearer realm=..." whatever the bucket (journal note
//     "gcs: bad token");
//   - an anonymous request (no Authorization) reading a private bucket, or
//     writing or deleting anywhere while Config.Tokens is not empty, gets
//     403 AccessDenied ("gcs: anonymous");
//   - with a valid token everything is allowed ("gcs: token ok").
//
// With no Tokens configured, writes are open to anonymous callers (an
// emulator convenience); public buckets are always readable anonymously.
//
// Objects live in memory, or with Config.DataDir stream to and from files
// (blobstore) and are loaded again by the next New; Config.MaxBytes bounds
// them and upload bodies have an idle read timeout. Only the newest
// generation of an object is kept. Buckets created through the API are
// persisted too.
//
// V4 signed URLs (signedurl.go) are verified: GOOG4-RSA-SHA256 against
// Config.ServiceAccounts and GOOG4-HMAC-SHA256 against Config.HMACKeys; a
// valid one is allowed what a token is ("gcs: signed URL ok (ID)").
package gcsemu
