// Package images builds edgeconform's container images, originemu and
// edgecache, without pulling anything: the Go binary is built on the host
// (CGO_ENABLED=0, static) and sent to the Docker engine in a build context
// holding just that binary, a Dockerfile FROM scratch, and for edgecache the
// host's CA bundle.
//
// An image is tagged by a SHA-256 of what it is made of (the sources of
// every package the binary links, the Go version and flags, the Dockerfile:
// edgeconform/originemu:3f2a...), so Ensure builds only when the code
// changed, costs a go list when it did not, and a test always runs the code
// it was built from. Each build also tags :latest, which the Compose demo
// uses.
package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// ModulePath is the Go module the images are built from.
const ModulePath = "github.com/edgeconform/edgeconform"

// DefaultRepository prefixes image names: edgeconform/originemu.
const DefaultRepository = "edgeconform"

// hostRoots is where Debian-like hosts keep the system CA bundle; Go's
// crypto/x509 reads the same path inside the image.
const hostRoots = "/etc/ssl/certs/ca-certificates.crt"

// Image is one image to build.
type Image struct {
	// Name is the binary's and the image's name: originemu, edgecache.
	Name string
	// Package is the main package, relative to the module root.
	Package string
	// Ports are the EXPOSE lines (documentation; Run maps its own).
	Ports []string
	// Roots, if set, copies the host's CA bundle into the image so the
	// binary trusts public origins (edgecache reaching a real CDN origin).
	Roots bool
}

// Originemu is the origin emulator's image: /originemu, control API on 9000,
// listeners from 8080 by convention.
func Originemu() Image {
	return Image{Name: "originemu", Package: "./emulators/cmd/originemu", Ports: []string{"9000", "8080"}}
}

// Edgecache is the reference edge cache's image: /edgecache, clients on
// 8000, admin (/healthz, /metrics) on 9090 by convention.
func Edgecache() Image {
	return Image{Name: "edgecache", Package: "./reference/cmd/edgecache", Ports: []string{"8000", "9090"}, Roots: true}
}

// All is every image, in build order.
func All() []Image { return []Image{Originemu(), Edgecache()} }

// Options say where to build from and how to report.
type Options struct {
	// ModuleRoot is the directory holding the module's go.mod; found with
	// FindModuleRoot when empty.
	ModuleRoot string
	// Repository prefixes the image name (DefaultRepository when empty).
	Repository string
	// Logger reports builds (discarded when nil).
	Logger *slog.Logger
}

// Ensure returns the reference of img built from the current source, building
// the binary and, when no image with that content exists yet, the image.
func Ensure(ctx context.Context, img Image, opts Options) (string, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	repo := opts.Repository
	if repo == "" {
		repo = DefaultRepository
	}
	root := opts.ModuleRoot
	if root == "" {
		var err error
		if root, err = FindModuleRoot(ctx); err != nil {
			return "", err
		}
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return "", fmt.Errorf("images: connecting to the Docker engine: %w", err)
	}
	defer cli.Close()
	goarch, err := engineArch(ctx, cli)
	if err != nil {
		return "", err
	}

	unlock, err := lock(img.Name)
	if err != nil {
		return "", err
	}
	defer unlock()

	start := time.Now()
	key, err := sourceKey(ctx, root, img, goarch)
	if err != nil {
		return "", err
	}
	ref := fmt.Sprintf("%s/%s:%s", repo, img.Name, key[:16])
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		log.Debug("image up to date", "image", ref, "checked_in", time.Since(start).Round(time.Millisecond))
		return ref, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("images: inspecting %s: %w", ref, err)
	}

	dir, err := os.MkdirTemp("", "edgeconform-image-")
	if err != nil {
		return "", fmt.Errorf("images: %w", err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, img.Name)
	if err := goBuild(ctx, root, img.Package, bin, goarch); err != nil {
		return "", err
	}
	buildCtx, err := contextTar(img, bin)
	if err != nil {
		return "", err
	}
	latest := fmt.Sprintf("%s/%s:latest", repo, img.Name)
	res, err := cli.ImageBuild(ctx, bytes.NewReader(buildCtx), client.ImageBuildOptions{
		Tags: []string{ref, latest}, Remove: true, ForceRemove: true,
		Labels: map[string]string{"org.opencontainers.image.source": ModulePath, "org.opencontainers.image.title": img.Name},
	})
	if err != nil {
		return "", fmt.Errorf("images: building %s: %w", ref, err)
	}
	defer res.Body.Close()
	if err := readBuildOutput(res.Body); err != nil {
		return "", fmt.Errorf("images: building %s: %w", ref, err)
	}
	log.Info("image built", "image", ref, "also", latest, "took", time.Since(start).Round(time.Millisecond))
	pruneStale(ctx, cli, repo+"/"+img.Name, ref, log)
	return ref, nil
}

// staleAfter is how old an image built from other code must be before a
// new build removes it: old enough that no test still about to start a
// container from it (a concurrent run on older code) can be hurt.
const staleAfter = time.Hour

// pruneStale removes the content-tagged images of name other than keep and
// :latest, older than staleAfter, so that builds on changing code do not
// pile up. Images in use are left alone (the engine refuses); errors are
// only logged.
func pruneStale(ctx context.Context, cli *testcontainers.DockerClient, name, keep string, log *slog.Logger) {
	res, err := cli.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("reference", name)})
	if err != nil {
		log.Debug("listing old images", "err", err)
		return
	}
	cutoff := time.Now().Add(-staleAfter).Unix()
	for _, im := range res.Items {
		if im.Created > cutoff {
			continue
		}
		for _, tag := range im.RepoTags {
			if tag == keep || tag == name+":latest" || !strings.HasPrefix(tag, name+":") {
				continue
			}
			if _, err := cli.ImageRemove(ctx, tag, client.ImageRemoveOptions{}); err != nil {
				log.Debug("removing an old image", "image", tag, "err", err)
				continue
			}
			log.Info("removed an old image", "image", tag)
		}
	}
}

// engineArch is the Go architecture of the Docker engine's machine.
func engineArch(ctx context.Context, cli *testcontainers.DockerClient) (string, error) {
	info, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", fmt.Errorf("images: asking the Docker engine for its architecture: %w", err)
	}
	switch a := info.Info.Architecture; a {
	case "x86_64", "amd64":
		return "amd64", nil
	case "aarch64", "arm64":
		return "arm64", nil
	case "":
		return runtime.GOARCH, nil
	default:
		return a, nil
	}
}

// buildFlags are the go build flags of every image binary.
var buildFlags = []string{"-trimpath", "-buildvcs=false", "-ldflags=-s -w"}

// goCommand runs the go command in root for linux/goarch without cgo.
func goCommand(ctx context.Context, root, goarch string, args ...string) *exec.Cmd {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.CommandContext(ctx, goTool, args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	return cmd
}

// goBuild builds a static binary of pkg (relative to root) at out.
func goBuild(ctx context.Context, root, pkg, out, goarch string) error {
	cmd := goCommand(ctx, root, goarch, append(append([]string{"build"}, buildFlags...), "-o", out, pkg)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("images: go build %s in %s: %w\n%s", pkg, root, err, stderr.String())
	}
	return nil
}

// sourceKey is a SHA-256 (hex) of everything img is made of, without
// building it: the Go version and build settings, every package the binary
// links (as go list -deps sees it for linux/goarch without cgo) by module
// version where the module is an immutable download and by the content of
// its files otherwise (this module, replaced ones, the standard library by
// the Go version), the Dockerfile and the CA bundle. Equal keys give equal
// images, so the key is the image's tag, and an up-to-date image costs a go
// list instead of a build.
func sourceKey(ctx context.Context, root string, img Image, goarch string) (string, error) {
	const format = "{{.ImportPath}}\t{{.Standard}}\t{{with .Module}}{{.Path}}@{{.Version}}{{if .Replace}} replaced{{end}}{{end}}\t{{.Dir}}\t" +
		"{{join .GoFiles \" \"}} {{join .SFiles \" \"}} {{join .HFiles \" \"}} {{join .SysoFiles \" \"}} {{join .EmbedFiles \" \"}}"
	cmd := goCommand(ctx, root, goarch, "list", "-deps", "-f", format, img.Package)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("images: go list -deps %s in %s: %w\n%s", img.Package, root, err, stderr.String())
	}
	ver, err := goCommand(ctx, root, goarch, "env", "GOVERSION", "GOAMD64", "GOARM64", "GOEXPERIMENT", "GOFLAGS").Output()
	if err != nil {
		return "", fmt.Errorf("images: go env: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "go env: %s\nflags: %q\ngoarch: %s\n", ver, buildFlags, goarch)
	fmt.Fprintf(h, "Dockerfile:\n%s\n", dockerfile(img))
	if img.Roots {
		fmt.Fprintf(h, "roots: %x\n", sha256.Sum256(rootsBundle()))
	}
	for line := range strings.Lines(string(out)) {
		f := strings.SplitN(strings.TrimRight(line, "\n"), "\t", 5)
		if len(f) != 5 {
			return "", fmt.Errorf("images: go list -deps: unexpected line %q", line)
		}
		importPath, std, mod, dir, files := f[0], f[1], f[2], f[3], strings.Fields(f[4])
		switch {
		case std == "true":
			fmt.Fprintf(h, "std %s\n", importPath)
		case mod != "" && !strings.HasSuffix(mod, "@") && !strings.HasSuffix(mod, " replaced"):
			fmt.Fprintf(h, "pkg %s %s\n", importPath, mod) // a module download is immutable
		default:
			fmt.Fprintf(h, "pkg %s local\n", importPath)
			for _, name := range files {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					return "", fmt.Errorf("images: hashing %s: %w", importPath, err)
				}
				fmt.Fprintf(h, "file %s %d %x\n", name, len(b), sha256.Sum256(b))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// dockerfile is the image's recipe: nothing but the binary (and the CA
// bundle), run as nobody; /config is where configurations are mounted or
// copied.
func dockerfile(img Image) string {
	var b strings.Builder
	b.WriteString("FROM scratch\n")
	fmt.Fprintf(&b, "COPY %s /%s\n", img.Name, img.Name)
	if img.Roots {
		b.WriteString("COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt\n")
	}
	b.WriteString("WORKDIR /config\n")
	b.WriteString("USER 65534:65534\n")
	for _, p := range img.Ports {
		fmt.Fprintf(&b, "EXPOSE %s/tcp\n", p)
	}
	fmt.Fprintf(&b, "ENTRYPOINT [\"/%s\"]\n", img.Name)
	return b.String()
}

// contextTar is the build context: the Dockerfile, the binary, the CA
// bundle; fixed times and owners, so equal inputs give equal bytes.
func contextTar(img Image, bin string) ([]byte, error) {
	binBytes, err := os.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("images: reading the built binary: %w", err)
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte(dockerfile(img))},
		{img.Name, 0o755, binBytes},
	}
	if img.Roots {
		files = append(files, struct {
			name string
			mode int64
			data []byte
		}{"ca-certificates.crt", 0o644, rootsBundle()})
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("images: writing the build context: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("images: writing the build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("images: writing the build context: %w", err)
	}
	return buf.Bytes(), nil
}

// rootsBundle is the build host's CA bundle, or a comment saying there is
// none (an image without system roots still trusts --origin-ca).
func rootsBundle() []byte {
	roots, err := os.ReadFile(hostRoots)
	if err != nil {
		return []byte("# no CA bundle at " + hostRoots + " on the build host\n")
	}
	return roots
}

// readBuildOutput drains the engine's JSON message stream and returns the
// build's error, if any, with the last lines of output.
func readBuildOutput(r io.Reader) error {
	var tail []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var msg struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
			continue
		}
		if msg.Error != "" {
			return fmt.Errorf("%s (output: %s)", msg.Error, strings.Join(tail, " | "))
		}
		if s := strings.TrimSpace(msg.Stream); s != "" {
			tail = append(tail, s)
			if len(tail) > 5 {
				tail = tail[1:]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the build output: %w", err)
	}
	return nil
}

// FindModuleRoot finds the directory of the edgeconform module: from this
// source file's location when it is on disk (a checkout, or the module
// cache), else by asking the go command (go list -m), which also works from
// another module that requires edgeconform.
func FindModuleRoot(ctx context.Context) (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Dir(file)
		for {
			if isModuleRoot(dir) {
				return dir, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("images: finding the %s module: no source path and no go command: %w", ModulePath, err)
	}
	out, err := exec.CommandContext(ctx, goTool, "list", "-m", "-f", "{{.Dir}}", ModulePath).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("images: finding the %s module (go list -m): %w; pass the module root explicitly", ModulePath, err)
	}
	dir := strings.TrimSpace(string(out))
	if !isModuleRoot(dir) {
		return "", fmt.Errorf("images: go list -m says %s is at %q, which holds no go.mod for it; pass the module root explicitly", ModulePath, dir)
	}
	return dir, nil
}

func isModuleRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == ModulePath
		}
	}
	return false
}

// Start starts the container req describes, with custom applied to it, on
// img (built by Ensure with opts) unless a customizer named another image.
// The container is returned when it exists, even with an error, so the
// caller can terminate it.
func Start(ctx context.Context, req testcontainers.GenericContainerRequest, custom []testcontainers.ContainerCustomizer,
	img Image, opts Options) (testcontainers.Container, error) {
	for _, c := range custom {
		if err := c.Customize(&req); err != nil {
			return nil, err
		}
	}
	if req.Image == "" {
		ref, err := Ensure(ctx, img, opts)
		if err != nil {
			return nil, fmt.Errorf("the %s image: %w", img.Name, err)
		}
		req.Image = ref
	}
	ctr, err := testcontainers.GenericContainer(ctx, req)
	if err != nil {
		return ctr, fmt.Errorf("starting %s: %w", req.Image, err)
	}
	return ctr, nil
}

// Split applies a module's own options (of type O) to a fresh S and returns
// the other customizers, which go to Start.
func Split[S any, O ~func(*S) error](opts []testcontainers.ContainerCustomizer) (S, []testcontainers.ContainerCustomizer, error) {
	var s S
	var rest []testcontainers.ContainerCustomizer
	for _, o := range opts {
		if mo, ok := o.(O); ok {
			if err := mo(&s); err != nil {
				return s, nil, err
			}
			continue
		}
		rest = append(rest, o)
	}
	return s, rest, nil
}
