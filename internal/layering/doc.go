// Package layering pins the module's layering in tests: which folders may
// import which (the emulators and the reference are the ground floor, deploy
// and suites sit on top, internal serves both), that the emulator's Go client
// does not link the server, that package names are unique, and that every
// package has a doc comment saying its one job. It has no code of its own;
// the checks read `go list -json ./...` of the module.
package layering
