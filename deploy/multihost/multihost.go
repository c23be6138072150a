// Package multihost starts a tiered edge-cache topology in containers on a
// private Docker network:
//
//	client ──► edge-1 ┐
//	client ──► edge-2 ├──► shield ──► origin-a (primary, originemu, h2)
//	client ──► edge-3 ┘          └──► origin-b (failover, originemu, h2)
//
// Every node is an edgecache container (reference/edgecontainer) with the
// same configuration; the edges run with --shield http://shield:8000, so
// their cache misses go to the shield, which applies the origin settings
// (SHD-1). The origins are emulator containers (emulators/emucontainer); the
// shield reaches them at fixed IPs (--resolve), not through Docker's DNS, so
// that disconnecting an origin from the network makes the shield's connects
// time out (a real connect timeout, TMO-1) rather than fail name resolution.
//
// The multi-host test and `make conformance-docker` (deploy/cmd/edgetopo)
// use it.
package multihost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"golang.org/x/sync/errgroup"

	"github.com/edgeconform/edgeconform/emulators/emucontainer"
	"github.com/edgeconform/edgeconform/internal/images"
	"github.com/edgeconform/edgeconform/reference/edgecontainer"
)

// Names and addresses inside the topology.
const (
	// PrimaryHost and BackupHost are the origins' originAddress values.
	PrimaryHost = "origin-a.test"
	BackupHost  = "origin-b.test"
	// ShieldAlias is the shield node's name on the network.
	ShieldAlias = "shield"
	// OriginListener is each emulator's one listener (h2, TLS).
	OriginListener = "origin"
	// ClientHost is the Host clients send; the service matches any host.
	ClientHost = "media.example.com"
)

// Options shape the topology. The zero value is the shape: three
// edges, one shield, two origins, connectTimeout 1s.
type Options struct {
	// Edges is the number of edge nodes (default 3).
	Edges int
	// ConnectTimeout is each origin's connectTimeout (default 1s; --lab
	// allows sub-second values).
	ConnectTimeout time.Duration
	// MaxAttemptsTimeout is the primary's maxAttemptsTimeout (default
	// 4×ConnectTimeout + 2s).
	MaxAttemptsTimeout time.Duration
	// ModuleRoot is where to build the images from (found automatically
	// when empty).
	ModuleRoot string
	// Logger reports progress (discarded when nil).
	Logger *slog.Logger
}

func (o *Options) defaults() {
	if o.Edges <= 0 {
		o.Edges = 3
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = time.Second
	}
	if o.MaxAttemptsTimeout <= 0 {
		o.MaxAttemptsTimeout = 4*o.ConnectTimeout + 2*time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Topology is a running topology.
type Topology struct {
	Options Options
	// Network is the private network; Subnet its address range.
	Network *testcontainers.DockerNetwork
	Subnet  netip.Prefix
	// Primary and Backup are the origins; PrimaryIP and BackupIP their
	// fixed addresses on the network.
	Primary, Backup     *emucontainer.Container
	PrimaryIP, BackupIP netip.Addr
	// Shield is the parent tier; Edges are the client-facing nodes, named
	// edge-1, edge-2, ... in Cache-Status.
	Shield *edgecontainer.Container
	Edges  []*edgecontainer.Container
	// Config is the service configuration every node runs.
	Config []byte

	docker *testcontainers.DockerClient
	mu     sync.Mutex
	closed bool
}

// Config is the configuration every node runs: one route to the primary,
// which fails over to the backup on a connect failure; everything cached
// (FORCE_CACHE_ALL) so that tiers fill once per key.
func Config(o Options) []byte {
	o.defaults()
	ct := o.ConnectTimeout.String()
	return fmt.Appendf(nil, `# The multi-host topology (deploy/multihost): every node runs this file.
origins:
  - name: primary
    originAddress: %s
    protocol: HTTP2
    port: %d
    maxAttempts: 1
    retryConditions: [CONNECT_FAILURE]
    failoverOrigin: backup
    timeout: {connectTimeout: %s, maxAttemptsTimeout: %s}
  - name: backup
    originAddress: %s
    protocol: HTTP2
    port: %d
    retryConditions: [CONNECT_FAILURE]
    timeout: {connectTimeout: %s}
service:
  name: media
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: all}]
    pathMatchers:
      - name: all
        routeRules:
          - priority: 1
            matchRules: [{prefixMatch: /}]
            origin: primary
            routeAction: {cdnPolicy: {cacheMode: FORCE_CACHE_ALL, defaultTtl: 3600s}}
`, PrimaryHost, emucontainer.FirstListenerPort, ct, o.MaxAttemptsTimeout.String(),
		BackupHost, emucontainer.FirstListenerPort, ct)
}

// Start builds the images if needed and starts the topology. On error, what
// was started is stopped.
func Start(ctx context.Context, o Options) (_ *Topology, err error) {
	o.defaults()
	log := o.Logger
	t := &Topology{Options: o, Config: Config(o)}
	defer func() {
		if err != nil {
			if cerr := t.Close(context.WithoutCancel(ctx)); cerr != nil {
				log.Warn("topology: cleaning up after a failed start", "err", cerr)
			}
		}
	}()
	start := time.Now()
	emuImage, err := images.Ensure(ctx, images.Originemu(), images.Options{ModuleRoot: o.ModuleRoot, Logger: log})
	if err != nil {
		return nil, err
	}
	edgeImage, err := images.Ensure(ctx, images.Edgecache(), images.Options{ModuleRoot: o.ModuleRoot, Logger: log})
	if err != nil {
		return nil, err
	}
	log.Info("topology: images ready", "originemu", emuImage, "edgecache", edgeImage, "took", time.Since(start).Round(time.Millisecond))

	if t.docker, err = testcontainers.NewDockerClientWithOpts(ctx); err != nil {
		return nil, fmt.Errorf("topology: connecting to the Docker engine: %w", err)
	}
	if err := t.createNetwork(ctx); err != nil {
		return nil, err
	}

	// The origins, side by side.
	g, gctx := errgroup.WithContext(ctx)
	for _, origin := range []struct {
		dst   **emucontainer.Container
		alias string
	}{{&t.Primary, "origin-a"}, {&t.Backup, "origin-b"}} {
		g.Go(func() error {
			c, err := emucontainer.Run(gctx, testcontainers.WithImage(emuImage),
				emucontainer.WithListener(OriginListener, "h2"),
				tcnetwork.WithNetwork([]string{origin.alias}, t.Network))
			t.mu.Lock()
			*origin.dst = c
			t.mu.Unlock()
			if err != nil {
				return fmt.Errorf("topology: origin %s: %w", origin.alias, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if t.PrimaryIP, err = t.ipOf(ctx, t.Primary.GetContainerID()); err != nil {
		return nil, err
	}
	if t.BackupIP, err = t.ipOf(ctx, t.Backup.GetContainerID()); err != nil {
		return nil, err
	}

	common := []testcontainers.ContainerCustomizer{testcontainers.WithImage(edgeImage),
		edgecontainer.WithConfig(t.Config), edgecontainer.WithLab(),
		edgecontainer.WithOriginCA(t.Primary.CA), edgecontainer.WithOriginCA(t.Backup.CA),
		edgecontainer.WithResolve(PrimaryHost, t.PrimaryIP.String()),
		edgecontainer.WithResolve(BackupHost, t.BackupIP.String())}
	// The shield and the edges, side by side: an edge first reaches the
	// shield on its first miss.
	t.Edges = make([]*edgecontainer.Container, o.Edges)
	g, gctx = errgroup.WithContext(ctx)
	g.Go(func() error {
		c, err := edgecontainer.Run(gctx, append(slices.Clone(common), edgecontainer.WithName("shield"),
			tcnetwork.WithNetwork([]string{ShieldAlias}, t.Network))...)
		t.mu.Lock()
		t.Shield = c
		t.mu.Unlock()
		if err != nil {
			return fmt.Errorf("topology: shield: %w", err)
		}
		return nil
	})
	for i := range t.Edges {
		g.Go(func() error {
			name := "edge-" + strconv.Itoa(i+1)
			c, err := edgecontainer.Run(gctx, append(slices.Clone(common), edgecontainer.WithName(name),
				edgecontainer.WithShield("http://"+ShieldAlias+":"+strconv.Itoa(edgecontainer.ListenPort)),
				tcnetwork.WithNetwork([]string{name}, t.Network))...)
			t.mu.Lock()
			t.Edges[i] = c
			t.mu.Unlock()
			if err != nil {
				return fmt.Errorf("topology: %s: %w", name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	log.Info("topology: started", "network", t.Network.Name, "subnet", t.Subnet, "primary", t.PrimaryIP, "backup", t.BackupIP,
		"edges", o.Edges, "took", time.Since(start).Round(time.Millisecond))
	return t, nil
}

// createNetwork creates the private network with a subnet of its own, so
// that a container can come back at the same address (Docker only allows a
// fixed IP on a network with a user-configured subnet).
func (t *Topology) createNetwork(ctx context.Context) error {
	var lastErr error
	for range 8 {
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 213, byte(rand.IntN(256)), 0}), 24)
		nw, err := tcnetwork.New(ctx, tcnetwork.WithIPAM(&network.IPAM{Config: []network.IPAMConfig{{Subnet: subnet}}}),
			tcnetwork.WithLabels(map[string]string{"org.edgeconform.topology": "1"}))
		if err == nil {
			t.Network, t.Subnet = nw, subnet
			return nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "overlap") {
			break
		}
	}
	return fmt.Errorf("topology: creating the network: %w", lastErr)
}

// ipOf is a container's address on the topology's network.
func (t *Topology) ipOf(ctx context.Context, id string) (netip.Addr, error) {
	res, err := t.docker.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return netip.Addr{}, fmt.Errorf("topology: inspecting %s: %w", id, err)
	}
	if res.Container.NetworkSettings != nil {
		if ep, ok := res.Container.NetworkSettings.Networks[t.Network.Name]; ok && ep.IPAddress.IsValid() {
			return ep.IPAddress, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("topology: container %s has no address on %s", id, t.Network.Name)
}

// Disconnect takes an origin off the network: packets to its address go
// nowhere, so connects to it time out. Its published ports go too: its
// control API is unreachable until Reconnect.
func (t *Topology) Disconnect(ctx context.Context, c *emucontainer.Container) error {
	if _, err := t.docker.NetworkDisconnect(ctx, t.Network.ID, client.NetworkDisconnectOptions{Container: c.GetContainerID()}); err != nil {
		return fmt.Errorf("topology: disconnecting %s: %w", c.GetContainerID(), err)
	}
	return nil
}

// Reconnect puts an origin back on the network at its old address. Its
// control and listener URLs change (Docker publishes its ports again).
func (t *Topology) Reconnect(ctx context.Context, c *emucontainer.Container) error {
	var ip netip.Addr
	var alias string
	switch c {
	case t.Primary:
		ip, alias = t.PrimaryIP, "origin-a"
	case t.Backup:
		ip, alias = t.BackupIP, "origin-b"
	default:
		return errors.New("topology: Reconnect: not one of the origins")
	}
	_, err := t.docker.NetworkConnect(ctx, t.Network.ID, client.NetworkConnectOptions{Container: c.GetContainerID(),
		EndpointConfig: &network.EndpointSettings{Aliases: []string{alias}, IPAMConfig: &network.EndpointIPAMConfig{IPv4Address: ip}}})
	if err != nil {
		return fmt.Errorf("topology: reconnecting %s at %s: %w", alias, ip, err)
	}
	if err := c.Refresh(ctx); err != nil { // published anew, on other host ports
		return fmt.Errorf("topology: reconnecting %s: %w", alias, err)
	}
	return nil
}

// Close stops every container and removes the network.
func (t *Topology) Close(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	var ctrs []testcontainers.Container
	for _, e := range t.Edges {
		if e != nil {
			ctrs = append(ctrs, e)
		}
	}
	if t.Shield != nil {
		ctrs = append(ctrs, t.Shield)
	}
	if t.Primary != nil {
		ctrs = append(ctrs, t.Primary)
	}
	if t.Backup != nil {
		ctrs = append(ctrs, t.Backup)
	}
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, c := range ctrs {
		wg.Go(func() {
			if err := testcontainers.TerminateContainer(c, testcontainers.StopTimeout(5*time.Second)); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	if t.Network != nil {
		if err := t.Network.Remove(ctx); err != nil {
			errs = append(errs, fmt.Errorf("removing network %s: %w", t.Network.Name, err))
		}
	}
	if t.docker != nil {
		t.docker.Close()
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("topology: close: %w", err)
	}
	return nil
}
