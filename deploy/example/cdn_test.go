// This file is docs/deploy.md's example, verbatim below this comment,
// so that the example keeps compiling and passing: using the
// testcontainers modules from another module's tests.

// cdn_test.go in your module; go.mod: require github.com/edgeconform/edgeconform <version>
package cdn_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"

	"github.com/edgeconform/edgeconform/deploy/dockertest"
	"github.com/edgeconform/edgeconform/emulators/emucontainer"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/reference/edgecontainer"
)

func TestMain(m *testing.M) {
	dockertest.Setup() // TESTCONTAINERS_RYUK_DISABLED=true, and the host override when needed
	os.Exit(m.Run())
}

func TestFailoverOn503(t *testing.T) {
	dockertest.Require(t) // skips without Docker; fails instead with EDGECONFORM_REQUIRE_DOCKER=1
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	nw, err := network.New(ctx)
	testcontainers.CleanupNetwork(t, nw)
	if err != nil {
		t.Fatal(err)
	}
	emu, err := emucontainer.Run(ctx,
		emucontainer.WithListener("primary", "h2"),
		emucontainer.WithListener("backup", "http"),
		emucontainer.WithRules(rules.Rule{Match: rules.Match{Listener: "primary"}, Unlimited: true,
			Action: rules.Action{Status: 503}}),
		network.WithNetwork([]string{"origin.test"}, nw))
	testcontainers.CleanupContainer(t, emu)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`
origins:
  - {name: primary, originAddress: origin.test, protocol: HTTP2, port: %d,
     retryConditions: [HTTP_5XX], failoverOrigin: backup}
  - {name: backup, originAddress: origin.test, protocol: HTTP, port: %d}
service:
  name: demo
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: all}]
    pathMatchers: [{name: all, routeRules: [{priority: 1, matchRules: [{prefixMatch: /}], origin: primary}]}]
`, emu.Listeners["primary"].Port, emu.Listeners["backup"].Port)
	edge, err := edgecontainer.Run(ctx, edgecontainer.WithConfig([]byte(cfg)),
		edgecontainer.WithOriginCA(emu.CA), network.WithNetwork([]string{"edge"}, nw))
	testcontainers.CleanupContainer(t, edge)
	if err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get(edge.URL + "/video/seg1.ts")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	reqs, err := emu.Client().WaitEnded(ctx, journal.Query{PathPrefix: "/video/"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if reqs[0].Listener != "primary" || reqs[0].Status != 503 || reqs[1].Listener != "backup" {
		t.Fatalf("origin saw %s %d, then %s", reqs[0].Listener, reqs[0].Status, reqs[1].Listener)
	}
}
