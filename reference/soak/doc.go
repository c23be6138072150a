// Package soak holds the reference edge cache's fault-load soak (issue
// #12, "Done when"): `make soak`, or
//
//	go test -tags soak -run TestSoak -v ./reference/soak/ [-soak.duration 60s] [-soak.clients 64] [-soak.cache-mib 64]
//
// It builds edgecache and runs `edgecache serve` as a child process (so
// its peak RSS, /proc/PID/status VmHWM, is its own) in front of an
// in-process origin emulator with an HTTP/1.1 and an h2 origin. 64 clients
// (each on its own keep-alive connection) ask for objects of 1 KiB to
// 5 MiB, whole or by ranges, while faults are injected on a share of the
// origin fills (truncate, TCP reset, stall, 503, and on h2 RST_STREAM and
// GOAWAY) and objects change version. Every complete response is checked
// byte for byte with synth.Verify against the version its ETag names.
// After the faults stop, every object is read again and must be complete
// and correct.
//
// It prints requests, faults, complete, visibly failed (truncated, reset
// or an error status), silently wrong, wrong after faults stop, the edge's
// peak RSS and live heap, open client connections and origin bytes, and
// fails if anything was silently wrong, wrong after the faults stopped, or
// the peak RSS exceeded cache size + 64 MiB + 64 KiB per open client
// connection (issue #12 item 5).
package soak
