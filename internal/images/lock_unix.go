//go:build unix

package images

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lock serializes builds of one image across processes (the test binaries
// of `go test ./...` start together): the first builds, the others then
// find the image. The returned function unlocks.
func lock(name string) (func(), error) {
	path := filepath.Join(os.TempDir(), "edgeconform-image-"+name+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("images: lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("images: locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}
