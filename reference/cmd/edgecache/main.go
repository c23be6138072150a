// Command edgecache runs the reference edge cache on a Media CDN
// configuration (EdgeCacheOrigin and EdgeCacheService resources in one YAML
// file; see package config).
//
//	edgecache serve --config FILE --listen ADDR [--lab] [--origin-ca PEM_FILE]...
//	                [--resolve HOST=IP]... [--admin ADDR] [--log-format json|text]
//	edgecache validate --config FILE [--lab]
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
