package target

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/suites/topology"
)

// An external target configured from a -format reference topology is not
// the reference: the reference-only scenarios are not available to it
// (they skip, with the reason), unless it says it is the reference.
func TestExternalTargetIsNotTheReference(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	emus, err := StartEmulators(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer emus.Close()
	p := topology.Params{Profile: topology.Strict, ClientHost: "edge.test", OriginHost: "127.0.0.1", AltHost: "localhost",
		RouteRewriteHost: "r.test", OriginRewriteHost: "o.test", Ports: emus.Ports, Reference: true}
	n, err := topology.BuildNeutral(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := topology.NeutralJSON(n)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), topology.ParamsFile)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	allow, _ := topology.Lookup("rdr-allow")
	for _, refImpl := range []bool{false, true} {
		tg, err := Start(ctx, Settings{Target: "http://127.0.0.1:1", Control: emus.ControlURL, Profile: "strict", Topology: path, ReferenceImpl: refImpl})
		if err != nil {
			t.Fatal(err)
		}
		if ok, why := tg.Params.Available(allow); ok != refImpl || (!ok && why == "") {
			t.Errorf("reference-impl=%v: rdr-allow available=%v (%s)", refImpl, ok, why)
		}
		tg.Close()
	}
}
