// Package cdn is docs/deploy.md's example, kept as a test (cdn_test.go)
// so that it compiles and passes: another module's tests starting the origin
// emulator and the reference edge cache with the testcontainers modules
// (emulators/emucontainer, reference/edgecontainer).
package cdn
