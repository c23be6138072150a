package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The ceiling is a bare Go net/http server on the same bytes, so the table
// shows what Go's HTTP stack alone reaches against nginx on this machine:
// /hit/ paths are answered from memory (Content-Length, one Write), /pass/
// paths are proxied to the origin through one http.Transport with a
// keep-alive pool (no header rewriting, no logging, no checks). It is
// informational: it is not counted in issue #14's goal, and it is the
// evidence for what bounds a row. bench-peers runs it as a child process
// (itself with -serve-ceiling), like the other implementations.

// ceilingFlag is the hidden flag that makes bench-peers the ceiling server.
const ceilingFlag = "serve-ceiling"

// serveCeiling serves docroot's files (read into memory) under /hit/ and
// proxies /pass/ to origin on listen until ctx ends.
func serveCeiling(ctx context.Context, listen, docroot, origin string) error {
	files := map[string][]byte{}
	err := filepath.WalkDir(filepath.Join(docroot, "hit"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files["/hit/"+d.Name()] = b
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the ceiling's files: %w", err)
	}
	ou, err := url.Parse(origin)
	if err != nil {
		return fmt.Errorf("ceiling origin %q: %w", origin, err)
	}
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 128, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	bufs := sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hit/", func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h["Content-Type"] = []string{"application/octet-stream"}
		h["Content-Length"] = []string{fmt.Sprint(len(b))}
		w.Write(b)
	})
	mux.HandleFunc("GET /pass/", func(w http.ResponseWriter, r *http.Request) {
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host, out.Host, out.RequestURI = ou.Scheme, ou.Host, ou.Host, ""
		resp, err := tr.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		buf := bufs.Get().(*[]byte)
		defer bufs.Put(buf)
		// Through Write only: the ResponseWriter's ReadFrom would send the
		// header in a write of its own and copy through a fresh 32 KiB
		// buffer (net.genericReadFrom) on every response.
		io.CopyBuffer(struct{ io.Writer }{w}, resp.Body, *buf)
	})
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile) // bench-peers -pprof
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("ceiling listen: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("ceiling: %w", err)
	}
	return nil
}

// ceilingMain runs the ceiling server from bench-peers' own arguments:
// -serve-ceiling ADDR DOCROOT ORIGIN_URL.
func ceilingMain(ctx context.Context, args []string) error {
	if len(args) != 3 || strings.TrimSpace(args[0]) == "" {
		return fmt.Errorf("-%s wants ADDR DOCROOT ORIGIN_URL, got %q", ceilingFlag, args)
	}
	return serveCeiling(ctx, args[0], args[1], args[2])
}
