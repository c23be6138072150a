// Package dockertest decides whether container tests run: they skip, with
// the reason, on a machine without a Docker engine, and fail instead when
// EDGECONFORM_REQUIRE_DOCKER=1 (CI, where Docker is part of the contract).
package dockertest

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// RequireEnv makes a missing Docker engine a failure instead of a skip.
const RequireEnv = "EDGECONFORM_REQUIRE_DOCKER"

// RyukEnv must be "true": testcontainers' reaper is an image, and images
// cannot be pulled here.
const RyukEnv = "TESTCONTAINERS_RYUK_DISABLED"

// HostEnv is where testcontainers reaches published ports.
const HostEnv = "TESTCONTAINERS_HOST_OVERRIDE"

// Setup prepares the environment for testcontainers; call it from TestMain
// (or main) before anything uses testcontainers, which reads its
// configuration once. It sets, unless they are set already:
//
//   - TESTCONTAINERS_RYUK_DISABLED=true: containers are removed by the
//     tests' own cleanups, not by the reaper, whose image cannot be pulled;
//   - TESTCONTAINERS_HOST_OVERRIDE=localhost when this process runs inside a
//     container (/.dockerenv) but shares the Docker engine's network
//     namespace (a local interface is on the engine's default bridge):
//     testcontainers would otherwise look for published ports at the
//     container's default gateway, where they are not.
func Setup() {
	if os.Getenv(RyukEnv) == "" {
		os.Setenv(RyukEnv, "true")
	}
	if _, set := os.LookupEnv(HostEnv); set {
		return
	}
	if _, err := os.Stat("/.dockerenv"); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if sharesEngineNetwork(ctx) {
		os.Setenv(HostEnv, "localhost")
	}
}

// sharesEngineNetwork says whether a local interface address is in the
// subnet of the engine's default bridge network.
func sharesEngineNetwork(ctx context.Context) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx) // the engine testcontainers will use
	if err != nil {
		return false
	}
	defer cli.Close()
	nw, err := cli.NetworkInspect(ctx, "bridge", client.NetworkInspectOptions{})
	if err != nil {
		return false
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, cfg := range nw.Network.IPAM.Config {
		if !cfg.Subnet.IsValid() {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(ipn.IP); ok && cfg.Subnet.Contains(ip.Unmap()) {
					return true
				}
			}
		}
	}
	return false
}

// Check says whether a Docker engine answers, and if not, why.
func Check(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil { // testcontainers panics on some broken set-ups
			err = fmt.Errorf("no Docker engine: %v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("no Docker engine: %w", err)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("the Docker engine does not answer: %w", err)
	}
	return nil
}

// Require skips tb when no Docker engine is usable, or fails it when
// EDGECONFORM_REQUIRE_DOCKER=1.
func Require(tb testing.TB) {
	tb.Helper()
	if err := Check(context.Background()); err != nil {
		if os.Getenv(RequireEnv) == "1" {
			tb.Fatalf("container test: %v (%s=1 makes this a failure)", err, RequireEnv)
		}
		tb.Skipf("skipping container test: %v (set %s=1 to make this a failure)", err, RequireEnv)
	}
	if !testcontainers.ReadConfig().RyukDisabled {
		tb.Fatalf("container test: %s is not true: testcontainers would pull its reaper image, and no image can be pulled (call dockertest.Setup in TestMain, or export %s=true)", RyukEnv, RyukEnv)
	}
}
