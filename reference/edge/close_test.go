package edge

import (
	"io"
	"testing"

	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

type closeCounter struct {
	store.Store
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return c.Store.(io.Closer).Close() }

// Close releases the store the server was given.
func TestCloseReleasesStore(t *testing.T) {
	cfg := &config.Config{Service: config.Service{Name: "s"}}
	st := &closeCounter{Store: store.NewMemory(1 << 20)}
	srv, err := New(cfg, upstream.New(upstream.Options{}), nil, nil, WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if st.closed != 1 {
		t.Fatalf("store closed %d times, want 1", st.closed)
	}
}
