// Package secrets resolves the Secret Manager secret versions an
// EdgeCacheOrigin names (awsV4Authentication.secretAccessKeyVersion,
// behaviour.md BKT-1) from a local directory, so that the reference edge
// cache needs no Secret Manager.
//
// A version "projects/P/secrets/NAME/versions/V" is read from the file
// DIR/NAME/V if it exists, else from the file DIR/NAME (any version). A
// bare "NAME", "projects/P/secrets/NAME" or version "latest" reads
// DIR/NAME only. The file's content, trimmed of surrounding white space, is
// the secret; an empty file is an error.
package secrets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Store resolves secret versions.
type Store interface {
	// Secret returns the secret named by version, or an error that names
	// what was looked for.
	Secret(version string) (string, error)
}

// ErrNotFound is wrapped by errors for secrets a Store does not have.
var ErrNotFound = errors.New("secret not found")

// Dir returns a Store reading the directory at path (see the package doc).
func Dir(path string) Store { return dir(path) }

type dir string

func (d dir) Secret(version string) (string, error) {
	name, ver, err := parse(version)
	if err != nil {
		return "", err
	}
	var files []string
	if ver != "" && ver != "latest" {
		files = append(files, filepath.Join(string(d), name, ver))
	}
	files = append(files, filepath.Join(string(d), name))
	for _, file := range files {
		b, err := os.ReadFile(file)
		switch {
		case err == nil:
			s := strings.TrimSpace(string(b))
			if s == "" {
				return "", fmt.Errorf("secret %q: file %s is empty", version, file)
			}
			return s, nil
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), isDir(file):
			continue
		default:
			return "", fmt.Errorf("secret %q: %w", version, err)
		}
	}
	return "", fmt.Errorf("secret %q: %w: no file %s", version, ErrNotFound, strings.Join(files, " or "))
}

// isDir reports whether file is a directory (DIR/NAME holding versions
// only).
func isDir(file string) bool {
	st, serr := os.Stat(file)
	return serr == nil && st.IsDir()
}

// parse splits a secret version into the secret's name and its version
// ("" when none is given).
func parse(version string) (name, ver string, err error) {
	v := strings.Trim(strings.TrimSpace(version), "/")
	parts := strings.Split(v, "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		name = parts[0]
	case len(parts) == 4 && parts[0] == "projects" && parts[2] == "secrets":
		name = parts[3]
	case len(parts) == 6 && parts[0] == "projects" && parts[2] == "secrets" && parts[4] == "versions":
		name, ver = parts[3], parts[5]
	default:
		return "", "", fmt.Errorf("secret %q: want projects/PROJECT/secrets/NAME/versions/VERSION", version)
	}
	for _, p := range []string{name, ver} {
		if p == "." || p == ".." || strings.ContainsAny(p, `\`) {
			return "", "", fmt.Errorf("secret %q: bad name or version %q", version, p)
		}
	}
	return name, ver, nil
}

// None is a Store without secrets: every lookup fails, saying that no
// secrets directory was configured.
var None Store = none{}

type none struct{}

func (none) Secret(version string) (string, error) {
	return "", fmt.Errorf("secret %q: %w: no secrets directory configured (edgecache --secrets DIR)", version, ErrNotFound)
}

// Map is a Store over a map from version to secret, for tests.
type Map map[string]string

// Secret implements Store.
func (m Map) Secret(version string) (string, error) {
	if s, ok := m[version]; ok {
		return s, nil
	}
	return "", fmt.Errorf("secret %q: %w", version, ErrNotFound)
}

// File is a value kept in a file, such as a bearer token, re-read when the
// file changes (size or modification time).
type File struct {
	path string

	mu    sync.Mutex
	value string
	mod   time.Time
	size  int64
}

// NewFile reads the file at path now, so that a missing or empty file is a
// startup error.
func NewFile(path string) (*File, error) {
	f := &File{path: path}
	if _, err := f.Value(); err != nil {
		return nil, err
	}
	return f, nil
}

// Value returns the file's trimmed content, re-reading it if it changed. A
// file that cannot be read any more keeps its last value.
func (f *File) Value() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(f.path)
	if err != nil {
		if f.value != "" {
			return f.value, nil
		}
		return "", err
	}
	if f.value != "" && st.ModTime().Equal(f.mod) && st.Size() == f.size {
		return f.value, nil
	}
	b, err := os.ReadFile(f.path)
	if err != nil {
		if f.value != "" {
			return f.value, nil
		}
		return "", err
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		if f.value != "" {
			return f.value, nil
		}
		return "", fmt.Errorf("%s is empty", f.path)
	}
	f.value, f.mod, f.size = v, st.ModTime(), st.Size()
	return v, nil
}
