// Package emucontainer runs the origin emulator (originemu) in a container,
// in the shape of a testcontainers-go module:
//
//	emu, err := emucontainer.Run(ctx,
//		emucontainer.WithListener("origin", "h2"),
//		emucontainer.WithListener("dead", "blackhole"))
//	defer testcontainers.TerminateContainer(emu)
//	emu.ControlURL            // http://localhost:32771, for emuclient.New
//	emu.Listeners["origin"]   // URL from the host, port inside the container
//	emu.CA                    // the emulator's test CA, PEM
//
// The image is built from this repository when it is missing (see
// internal/images); nothing is pulled. Any testcontainers.ContainerCustomizer
// applies too (network.WithNetwork for aliases on a private network,
// testcontainers.WithImage to use an image built elsewhere).
//
// Listeners are on 0.0.0.0 inside the container, from port 8080 in the
// order given, and mapped to random host ports. From the host, Docker's port
// mapping sits between the client and the emulator, so the faults below HTTP
// (refuse, blackhole, syn-drop) are only faithful for clients on the same
// Docker network, which reach the listener directly.
package emucontainer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"sigs.k8s.io/yaml"

	"github.com/edgeconform/edgeconform/emulators/emuclient"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/originemu"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/internal/images"
)

const (
	// ControlPort is the control API's port inside the container.
	ControlPort = 9000
	// FirstListenerPort is the first listener's port inside the container;
	// the next ones follow in the order they were given.
	FirstListenerPort = 8080
	// ConfigPath is where the generated configuration is copied.
	ConfigPath = "/config/originemu.yaml"

	startupTimeout = 60 * time.Second
)

// Listener is one emulator listener.
type Listener struct {
	Name    string
	Profile string
	// Port is the listener's port inside the container (reach it at
	// ALIAS:Port from the same Docker network).
	Port int
	// URL reaches the listener from the host through the mapped port
	// (https:// for the TLS profiles).
	URL string
}

// Container is a running emulator.
type Container struct {
	testcontainers.Container
	// ControlURL is the control API from the host (emuclient.New(ControlURL)).
	ControlURL string
	// Listeners by name.
	Listeners map[string]Listener
	// CA is the emulator's test CA (PEM): trust it for the TLS listeners.
	CA []byte
}

// Client is an emuclient for the control API.
func (c *Container) Client(opts ...emuclient.Option) *emuclient.Client {
	return emuclient.New(c.ControlURL, opts...)
}

// NetworkURL is the URL of the named listener for a client on the same
// Docker network that knows this container by host (an alias or its IP).
func (c *Container) NetworkURL(host, listener string) string {
	l := c.Listeners[listener]
	return scheme(originemu.Profile(l.Profile)) + "://" + host + ":" + strconv.Itoa(l.Port)
}

// settings are what this module's options set.
type settings struct {
	listeners  []originemu.ListenerConfig
	objects    []objects.Spec
	rules      []rules.Rule
	journalCap int
	moduleRoot string
}

// Option is one of this module's options; it is a
// testcontainers.ContainerCustomizer, so it mixes with theirs.
type Option func(*settings) error

// Customize does nothing: Run reads the module's options itself.
func (o Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

// WithListener adds a listener with a profile (http, h2c, https, h2,
// tls-expired, tls-wrong-name, tls-untrusted, refuse, blackhole, syn-drop).
// Without any, the emulator gets one listener per profile, named after it,
// in that order.
func WithListener(name, profile string) Option {
	return func(s *settings) error {
		p := originemu.Profile(profile)
		if !slices.Contains(originemu.Profiles, p) {
			return fmt.Errorf("emucontainer: listener %q: unknown profile %q", name, profile)
		}
		for _, l := range s.listeners {
			if l.Name == name {
				return fmt.Errorf("emucontainer: listener %q given twice", name)
			}
		}
		s.listeners = append(s.listeners, originemu.ListenerConfig{Name: name, Profile: p})
		return nil
	}
}

// WithObjects adds object specs to the configuration. A spec with File
// needs the file in the container too (testcontainers.WithFiles).
func WithObjects(specs ...objects.Spec) Option {
	return func(s *settings) error { s.objects = append(s.objects, specs...); return nil }
}

// WithRules adds rules to the configuration (also possible later, through
// the control API).
func WithRules(rs ...rules.Rule) Option {
	return func(s *settings) error { s.rules = append(s.rules, rs...); return nil }
}

// WithJournalCapacity sets the journal's size per record kind.
func WithJournalCapacity(n int) Option {
	return func(s *settings) error { s.journalCap = n; return nil }
}

// WithModuleRoot says where the edgeconform module is, to build the image
// from (found automatically otherwise).
func WithModuleRoot(dir string) Option {
	return func(s *settings) error { s.moduleRoot = dir; return nil }
}

// fileConfig is originemu --config's format.
type fileConfig struct {
	Control string `json:"control"`
	originemu.Config
}

// listeners are the listeners Run starts: the given ones, or one per
// profile; on 0.0.0.0 from FirstListenerPort, in order.
func listeners(given []originemu.ListenerConfig) []originemu.ListenerConfig {
	ls := slices.Clone(given)
	if len(ls) == 0 {
		for _, p := range originemu.Profiles {
			ls = append(ls, originemu.ListenerConfig{Name: string(p), Profile: p})
		}
	}
	for i := range ls {
		ls[i].Addr = "0.0.0.0:" + strconv.Itoa(FirstListenerPort+i)
	}
	return ls
}

// config is originemu's configuration file for these settings and
// listeners, with the control API on 0.0.0.0:ControlPort.
func config(s *settings, ls []originemu.ListenerConfig) ([]byte, error) {
	fc := fileConfig{Control: "0.0.0.0:" + strconv.Itoa(ControlPort), Config: originemu.Config{
		Listeners: ls, Objects: s.objects, Rules: s.rules, JournalCapacity: s.journalCap,
	}}
	b, err := yaml.Marshal(fc)
	if err != nil {
		return nil, fmt.Errorf("emucontainer: writing the configuration: %w", err)
	}
	return b, nil
}

// Run starts an emulator container and waits for its control API.
func Run(ctx context.Context, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	s, rest, err := images.Split[settings, Option](opts)
	if err != nil {
		return nil, err
	}
	ls := listeners(s.listeners)
	cfg, err := config(&s, ls)
	if err != nil {
		return nil, err
	}
	control := strconv.Itoa(ControlPort) + "/tcp"
	exposed := []string{control}
	for i := range ls {
		exposed = append(exposed, strconv.Itoa(FirstListenerPort+i)+"/tcp")
	}

	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			ExposedPorts: exposed,
			Cmd:          []string{"--config", ConfigPath, "--log-format", "json"},
			Files: []testcontainers.ContainerFile{{
				Reader: bytes.NewReader(cfg), ContainerFilePath: ConfigPath, FileMode: 0o444,
			}},
			WaitingFor: wait.ForHTTP("/v1/health").WithPort(control).WithStartupTimeout(startupTimeout),
		},
		Started: true,
	}
	ctr, err := images.Start(ctx, req, rest, images.Originemu(), images.Options{ModuleRoot: s.moduleRoot})
	var c *Container
	if ctr != nil {
		c = &Container{Container: ctr}
	}
	if err != nil {
		return c, fmt.Errorf("emucontainer: %w", err)
	}
	c.Listeners = make(map[string]Listener, len(ls))
	for i, l := range ls {
		c.Listeners[l.Name] = Listener{Name: l.Name, Profile: string(l.Profile), Port: FirstListenerPort + i}
	}
	if err := c.Refresh(ctx); err != nil {
		return c, err
	}
	c.CA, err = c.Client().CAPEM(ctx)
	if err == nil && len(c.CA) == 0 {
		err = errors.New("the control API returned an empty CA")
	}
	if err != nil {
		return c, fmt.Errorf("emucontainer: reading the CA: %w", err)
	}
	return c, nil
}

// Refresh re-reads the host ports into ControlURL and the listeners' URLs.
// Docker publishes the ports anew, on other host ports, when a container
// is disconnected from its network and connected again.
func (c *Container) Refresh(ctx context.Context) error {
	ep, err := c.PortEndpoint(ctx, strconv.Itoa(ControlPort)+"/tcp", "http")
	if err != nil {
		return fmt.Errorf("emucontainer: the control API's host port: %w", err)
	}
	c.ControlURL = ep
	for name, l := range c.Listeners {
		u, err := c.PortEndpoint(ctx, strconv.Itoa(l.Port)+"/tcp", scheme(originemu.Profile(l.Profile)))
		if err != nil {
			return fmt.Errorf("emucontainer: listener %s's host port: %w", name, err)
		}
		l.URL = u
		c.Listeners[name] = l
	}
	return nil
}

// scheme is the URL scheme a client uses for a profile.
func scheme(p originemu.Profile) string {
	switch p {
	case originemu.HTTPS, originemu.H2, originemu.TLSExpired, originemu.TLSWrongName, originemu.TLSUntrusted:
		return "https"
	}
	return "http"
}
