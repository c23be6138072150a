// Package bucketclients runs real bucket clients against the bucket
// emulators in an originemu process: the aws CLI, s3cmd and rclone (Debian
// packages) in its tests, and a peak-RSS check of the emulator for 1 GiB
// uploads to disk-backed backends (aws CLI multipart, Go client
// resumable).
//
// A client that is not installed is skipped with a message saying which
// package brings it; with EDGECONFORM_REQUIRE_CLIENTS=1 (set by CI) a
// missing client fails the test instead. The 1 GiB RSS test runs only with
// EDGECONFORM_BUCKET_RSS=1 (make bucket-rss).
package bucketclients
