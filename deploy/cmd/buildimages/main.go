// Command buildimages builds edgeconform's container images (make images):
// static binaries from this checkout in FROM scratch images, tagged by
// content and :latest. Nothing is pulled.
//
//	go run ./deploy/cmd/buildimages [-root DIR] [-repo edgeconform] [originemu] [edgecache]
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/edgeconform/edgeconform/internal/images"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "buildimages:", err)
		os.Exit(1)
	}
}

func run() error {
	root := flag.String("root", "", "module root `DIR` (default: found from the source or go list -m)")
	repo := flag.String("repo", images.DefaultRepository, "image `REPOSITORY` prefix")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	want := flag.Args()
	for _, img := range images.All() {
		if len(want) > 0 && !slices.Contains(want, img.Name) {
			continue
		}
		ref, err := images.Ensure(ctx, img, images.Options{ModuleRoot: *root, Repository: *repo, Logger: log})
		if err != nil {
			return err
		}
		fmt.Println(ref)
	}
	return nil
}
