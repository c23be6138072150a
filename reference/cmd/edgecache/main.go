// Command edgecache runs the reference edge cache on a Media CDN
// configuration (EdgeCacheOrigin and EdgeCacheService resources: one
// combined YAML file, or the files gcloud exports, one resource each; see
// package config and docs/mediacdn-config.md).
//
//	edgecache serve --config FILE|DIR... --listen ADDR [--lab] [--origin-ca PEM_FILE]...
//	                [--resolve HOST=IP]... [--admin ADDR] [--log-format json|text] [--log-level LEVEL]
//	                [--secrets DIR] [--gcs-endpoint URL] [--gcs-token-file FILE]
//	                [--cache-size SIZE] [--cache-dir DIR] [--name NAME]
//	                [--shield URL] [--shield-region REGION=URL]...
//	                [--client-region CODE] [--client-region-subdivision CODE]
//	                [--client-city NAME] [--client-city-lat-long LAT,LONG]
//	edgecache validate --config FILE|DIR... [--lab] [--secrets DIR]
//	(both: [--allow-unimplemented])
//
// --config is repeatable and takes a directory (its *.yaml, *.yml, *.json).
// A Media CDN field the reference does not implement (config.
// NotImplementedFields) is an error naming it; --allow-unimplemented accepts
// it with one warning per field (validate prints them, serve logs them).
// --client-region and its siblings are the client geography the response
// header variables {client_region} etc. render, the same for every client
// (empty when not given): the reference has no IP geolocation.
//
// serve prints "listening URL" (and "admin URL" with --admin) on standard
// output once it accepts connections; logs (one JSON record per client
// request and per origin attempt) go to standard error. SIGINT or SIGTERM
// stop it cleanly: no new connections, in-flight requests finish (up to 30
// seconds). validate exits 0 for a valid file, else 1 with every problem on
// standard error. Bad usage exits 2.
//
// --lab relaxes only the lower bounds of the timeouts (sub-second values for
// tests). --origin-ca adds trusted roots for origin TLS (the system roots
// stay trusted). --resolve maps an origin host name to an IP, like curl's
// --resolve; the port comes from the origin's port. --admin serves /healthz
// and Prometheus /metrics.
//
// Caching (behaviour.md CCH, RNG, COL, SHD; see package edge): --cache-size
// bounds the cache (bytes, or with a KiB/MiB/GiB suffix; default 256MiB),
// in memory, or on disk in --cache-dir (entries there survive a restart).
// --name is the node's name in the Cache-Status header (default edgecache).
// --shield URL makes the node an edge of a tiered cache: its fills go to the
// edgecache node at URL (a shield, itself started with the same
// configuration), which applies the origin settings; --shield-region
// REGION=URL sends the fills for origins whose flexShielding region is
// REGION to URL instead (SHD-2).
//
// Bucket origins (behaviour.md BKT, HST-4; see package fetch):
//
//   - --secrets DIR resolves each awsV4Authentication's
//     secretAccessKeyVersion "projects/P/secrets/NAME/versions/V" from the
//     file DIR/NAME/V, else DIR/NAME (content trimmed; see package
//     secrets). A secret not found is a startup error (exit 1) naming the
//     origin and the files looked for; without --secrets, serve fails for
//     any awsV4Authentication origin. validate checks the secrets only when
//     given --secrets. Requests to such origins are signed with SigV4
//     (service s3); methods other than GET, HEAD and OPTIONS get 502.
//   - --gcs-endpoint URL (default https://storage.googleapis.com) is where
//     gs://BUCKET origins go: Host BUCKET.<endpoint host> (virtual-hosted),
//     or path-style /BUCKET/OBJECT on the endpoint's host when that host is
//     an IP address or localhost or the bucket name has dots. An http://
//     endpoint (an emulator) is cleartext; https:// uses the origin's
//     protocol. hostRewrite is ignored for gs:// origins. --resolve applies
//     to the endpoint's host name.
//   - --gcs-token-file FILE sends "Authorization: Bearer TOKEN" (the file's
//     trimmed content, re-read when it changes) to gs:// origins, for
//     private buckets; a missing or empty file is a startup error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(exitCode(run(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	var ve *invalidError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "edgecache:", err)
		return 2
	case errors.As(err, &ve):
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintln(stderr, "edgecache:", err)
	return 1
}
