// Package s3emu is an S3-compatible bucket service for testing CDNs that
// sign their origin requests with AWS Signature Version 4.
//
// A [Server] is an http.Handler: mount it as an originemu listener's
// Backend so that rules and faults still apply around it and its verdicts
// land in the emulator's journal. It serves virtual-hosted
// (BUCKET.<HostSuffix>) and path-style (/BUCKET/KEY) requests: GET, HEAD,
// PUT (conditional writes, checksums) and DELETE of objects, multipart
// uploads (multipart.go), CopyObject (copy.go), DeleteObjects,
// ListObjectsV2 (and V1), CreateBucket, HeadBucket, DeleteBucket,
// GetBucketLocation and ListBuckets, with S3's XML bodies and error codes;
// every other subresource is 501 NotImplemented naming it. Object bytes are
// kept by blobstore: in memory, or streamed to and from files under
// Config.DataDir; upload bodies have an idle read timeout.
//
// Every request is authenticated as S3 does it: a header-signed or presigned
// SigV4 request is verified against the configured credentials (region,
// service, scope date, clock skew, expiry, signature, payload hash, and the
// chunk signatures of aws-chunked uploads), and a request without a
// signature is anonymous, allowed only to read a bucket configured with
// AnonymousRead. A rejected signature is answered like S3 answers it, with
// the canonical request and string to sign the server computed, so a user
// can see which part of the request a CDN changed; each verdict is added to
// the request's journal record ("sigv4: ok (AKID)", "sigv4: <Code>: why",
// "anonymous").
package s3emu
