//go:build !race

package s3emu

const raceEnabled = false
