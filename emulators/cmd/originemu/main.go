// Command originemu runs a fault-injecting origin emulator (package
// originemu) with its JSON control API (package control; Go client in
// package emuclient).
//
// Usage:
//
//	originemu [--control ADDR] [--listen NAME=PROFILE[@ADDR]]... [--config FILE]
//	          [--defaults] [--ca-out FILE] [--cert FILE --key FILE]
//	          [--journal-cap N] [--log-format text|json] [--log-level LEVEL]
//
// --listen adds a listener, e.g. --listen web=http@127.0.0.1:8080; without
// @ADDR it binds 127.0.0.1:0 (a free port). Port 0 works for --control too.
//
// --config reads a YAML or JSON file holding an originemu.Config (listeners,
// journalCapacity, maxRules, certFile, keyFile, objects, rules) plus a top-level
// "control" address; unknown fields are errors. Flags add to the file:
// --listen appends listeners, and --control, --journal-cap, --cert and --key
// override it.
//
// With --defaults, or when no listener is given at all, originemu starts one
// listener per profile, each named after its profile (--defaults puts them
// before any other listener):
//
//	NAME            ADDRESS            WHAT IT DOES
//	http            127.0.0.1:18080    cleartext HTTP/1.1
//	h2c             127.0.0.1:18081    cleartext h2 (prior knowledge)
//	https           127.0.0.1:18082    TLS, HTTP/1.1 only
//	h2              127.0.0.1:18083    TLS, h2 only
//	tls-expired     127.0.0.1:18084    TLS with an expired certificate
//	tls-wrong-name  127.0.0.1:18085    TLS with a certificate for another name
//	tls-untrusted   127.0.0.1:18086    TLS with a certificate from an untrusted CA
//	refuse          127.0.0.1:18087    connections refused
//	blackhole       127.0.0.1:18088    connections accepted, never answered
//	syn-drop        127.0.0.1:18089    dials time out
//	(control API)   127.0.0.1:18000    unless --control or the file's control says otherwise
//
// Otherwise the control API listens on 127.0.0.1:9000 unless told otherwise.
//
// Once every listener is up, originemu writes one line per listener to
// standard output, "NAME PROFILE URL", then the line "control URL" last, so
// a script can read up to the control line. The TLS listeners' certificates
// come from a test CA generated at start: --ca-out writes it as PEM (the
// control API serves it too, at /v1/ca.pem), or --cert and --key give the
// TLS serving listeners a certificate of your own. Logs go to standard
// error. SIGINT or SIGTERM shuts it down cleanly (exit status 0); bad flags
// or configuration exit with status 2, other failures with status 1.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// After the first signal, a second one kills at once.
	context.AfterFunc(ctx, stop)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode reports err on stderr and returns the exit status for it.
func exitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(*usageError)):
		fmt.Fprintf(stderr, "originemu: %v\n(run originemu -h for usage)\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "originemu: %v\n", err)
	return 1
}
