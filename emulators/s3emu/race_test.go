//go:build race

package s3emu

// raceEnabled: the race detector slows byte-heavy tests by 30x; they move
// fewer bytes (the same operations) under it.
const raceEnabled = true
