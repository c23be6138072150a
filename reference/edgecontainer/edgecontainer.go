// Package edgecontainer runs the reference edge cache (edgecache serve) in a
// container, in the shape of a testcontainers-go module:
//
//	edge, err := edgecontainer.Run(ctx,
//		edgecontainer.WithConfig(yamlBytes),       // Media CDN resources, as for --config
//		edgecontainer.WithOriginCA(emu.CA),        // --origin-ca
//		edgecontainer.WithResolve("origin.test", ip),
//		edgecontainer.WithLab())
//	defer testcontainers.TerminateContainer(edge)
//	edge.URL        // clients, from the host
//	edge.AdminURL   // /healthz, /metrics, from the host
//
// The image is built from this repository when it is missing (see
// internal/images); nothing is pulled. Inside the container the edge listens
// on 0.0.0.0:8000 (ListenPort) and serves its admin endpoints on
// 0.0.0.0:9090 (AdminPort); Run waits for /healthz.
package edgecontainer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/edgeconform/edgeconform/internal/images"
)

const (
	// ListenPort is the client-facing port inside the container.
	ListenPort = 8000
	// AdminPort serves /healthz and /metrics inside the container.
	AdminPort = 9090
	// ConfigPath is where the configuration is copied.
	ConfigPath = "/config/edgecache.yaml"

	startupTimeout = 60 * time.Second
)

// Container is a running edge cache.
type Container struct {
	testcontainers.Container
	// URL is the client-facing listener from the host.
	URL string
	// AdminURL serves /healthz and /metrics, from the host.
	AdminURL string
}

// settings are what this module's options set.
type settings struct {
	config     []byte
	cas        [][]byte
	resolves   []string
	lab        bool
	shield     string
	name       string
	args       []string
	moduleRoot string
}

// Option is one of this module's options; it is a
// testcontainers.ContainerCustomizer, so it mixes with theirs.
type Option func(*settings) error

// Customize does nothing: Run reads the module's options itself.
func (o Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

// WithConfig is the configuration (YAML or JSON with Media CDN's resources,
// as edgecache --config reads). Required.
func WithConfig(b []byte) Option {
	return func(s *settings) error { s.config = bytes.Clone(b); return nil }
}

// WithOriginCA adds PEM roots trusted for origin TLS (--origin-ca), e.g. an
// emulator's CA.
func WithOriginCA(pem []byte) Option {
	return func(s *settings) error {
		if len(pem) == 0 {
			return errors.New("edgecontainer: WithOriginCA: empty PEM")
		}
		s.cas = append(s.cas, bytes.Clone(pem))
		return nil
	}
}

// WithResolve maps an origin host name to an IP (--resolve HOST=IP).
func WithResolve(host, ip string) Option {
	return func(s *settings) error { s.resolves = append(s.resolves, host+"="+ip); return nil }
}

// WithLab relaxes the lower bounds of timeouts (--lab), for quick tests.
func WithLab() Option {
	return func(s *settings) error { s.lab = true; return nil }
}

// WithShield sends the edge's cache misses to the shield node at url
// (--shield URL), which applies the service's origin configuration (SHD-1).
func WithShield(url string) Option {
	return func(s *settings) error { s.shield = url; return nil }
}

// WithName is the node's name in Cache-Status (--name; default edgecache).
func WithName(name string) Option {
	return func(s *settings) error { s.name = name; return nil }
}

// WithArgs appends edgecache serve flags (--secrets, --gcs-endpoint, ...);
// files they name can be copied in with testcontainers.WithFiles.
func WithArgs(args ...string) Option {
	return func(s *settings) error { s.args = append(s.args, args...); return nil }
}

// WithModuleRoot says where the edgeconform module is, to build the image
// from (found automatically otherwise).
func WithModuleRoot(dir string) Option {
	return func(s *settings) error { s.moduleRoot = dir; return nil }
}

// command is the edgecache command line and the files Run uses for these
// settings.
func (s *settings) command() ([]string, []testcontainers.ContainerFile) {
	cmd := []string{"serve", "--config", ConfigPath,
		"--listen", "0.0.0.0:" + strconv.Itoa(ListenPort), "--admin", "0.0.0.0:" + strconv.Itoa(AdminPort)}
	files := []testcontainers.ContainerFile{{Reader: bytes.NewReader(s.config), ContainerFilePath: ConfigPath, FileMode: 0o444}}
	if s.lab {
		cmd = append(cmd, "--lab")
	}
	for i, pem := range s.cas {
		path := fmt.Sprintf("/config/origin-ca-%d.pem", i)
		files = append(files, testcontainers.ContainerFile{Reader: bytes.NewReader(pem), ContainerFilePath: path, FileMode: 0o444})
		cmd = append(cmd, "--origin-ca", path)
	}
	for _, r := range s.resolves {
		cmd = append(cmd, "--resolve", r)
	}
	if s.shield != "" {
		cmd = append(cmd, "--shield", s.shield)
	}
	if s.name != "" {
		cmd = append(cmd, "--name", s.name)
	}
	return append(cmd, s.args...), files
}

// Run starts an edge cache container and waits for /healthz.
func Run(ctx context.Context, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	s, rest, err := images.Split[settings, Option](opts)
	if err != nil {
		return nil, err
	}
	if len(s.config) == 0 {
		return nil, errors.New("edgecontainer: WithConfig is required")
	}
	cmd, files := s.command()
	listen, admin := strconv.Itoa(ListenPort)+"/tcp", strconv.Itoa(AdminPort)+"/tcp"
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			ExposedPorts: []string{listen, admin},
			Cmd:          cmd,
			Files:        files,
			WaitingFor:   wait.ForHTTP("/healthz").WithPort(admin).WithStartupTimeout(startupTimeout),
		},
		Started: true,
	}
	ctr, err := images.Start(ctx, req, rest, images.Edgecache(), images.Options{ModuleRoot: s.moduleRoot})
	var c *Container
	if ctr != nil {
		c = &Container{Container: ctr}
	}
	if err != nil {
		return c, fmt.Errorf("edgecontainer: %s: %w", strings.Join(cmd, " "), err)
	}
	if c.URL, err = c.PortEndpoint(ctx, listen, "http"); err != nil {
		return c, fmt.Errorf("edgecontainer: the listener's host port: %w", err)
	}
	if c.AdminURL, err = c.PortEndpoint(ctx, admin, "http"); err != nil {
		return c, fmt.Errorf("edgecontainer: the admin port: %w", err)
	}
	return c, nil
}

// Metrics reads /metrics and returns each sample line's value by its series
// (`edgecache_requests_total{status="200"}`).
func (c *Container) Metrics(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.AdminURL+"/metrics", nil)
	if err != nil {
		return nil, fmt.Errorf("edgecontainer: metrics: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("edgecontainer: metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("edgecontainer: metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("edgecontainer: metrics: %w", err)
	}
	return out, nil
}

// LogText is the container's output so far (edgecache logs JSON on stderr).
func (c *Container) LogText(ctx context.Context) (string, error) {
	rc, err := c.Logs(ctx)
	if err != nil {
		return "", fmt.Errorf("edgecontainer: logs: %w", err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return "", fmt.Errorf("edgecontainer: logs: %w", err)
	}
	return string(b), nil
}
