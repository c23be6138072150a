package target

import (
	"io"
	"os"
	"sync"
)

// EnvLogs names a JSON Lines file of the external target's per-request log
// records ("msg": "client request" / "origin attempt", the reference's
// field names where the target has them; a peer's LogSource): the LOG
// specs read it instead of skipping.
const EnvLogs = "EDGECONFORM_LOGS"

// fileLogs reads a growing JSON Lines file: each Records call parses what
// was appended since the last one.
type fileLogs struct {
	path string
	mu   sync.Mutex
	off  int64
	rec  recorder
}

func (f *fileLogs) Records(msg string) []Record {
	f.mu.Lock()
	if fh, err := os.Open(f.path); err == nil {
		if _, err := fh.Seek(f.off, io.SeekStart); err == nil {
			n, _ := io.Copy(&f.rec, fh)
			f.off += n
		}
		fh.Close()
	}
	f.mu.Unlock()
	return f.rec.Records(msg)
}
