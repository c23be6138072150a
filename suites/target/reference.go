package target

import (
	"bytes"
	"context"
	"encoding/json"

	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/edgeconform/edgeconform/emulators/emuclient"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/edge"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/logjson"
	"github.com/edgeconform/edgeconform/reference/node"
	"github.com/edgeconform/edgeconform/reference/secrets"
	"github.com/edgeconform/edgeconform/reference/shield"
	"github.com/edgeconform/edgeconform/reference/upstream"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Names the in-process reference uses; all resolve to loopback.
const (
	refClientHost   = "edge.test"
	refOriginHost   = "origin.test"
	refAltHost      = "alt.origin.test"
	refRouteRewrite = "route-rewrite.origin.test"
	refOriginRewrit = "origin-rewrite.origin.test"
	refDefaultPort  = "default-port.origin.test"
	refStorageHost  = "storage.origin.test"
	refBucket       = "edgeconform-vod"
	refGCSToken     = "ya29.edgeconform-test-token"
	refS3Bucket     = "edgeconform-media"
	refS3Region     = "eu-west-1"
	refS3KeyID      = "AKIDEDGECONFORM"
	refS3Secret     = "edgeconform/test/secret/key" // the emulator's, not a real credential
	refS3SecretName = "edgeconform-s3"
	refS3SecretVer  = "projects/edgeconform/secrets/" + refS3SecretName + "/versions/1"
)

// The in-process reference's nodes: the target URL's node is also the
// shield of RefEdges edge nodes (SHD-1); a second shield stands for the
// flexShielding region topology.ShieldRegion (SHD-2).
const (
	RefEdges            = 3
	RefShieldName       = "edgeconform-shield"
	RefRegionShieldName = "edgeconform-region-shield"
)

// RefEdgeName is the Cache-Status name of the in-process reference's
// i-th edge node.
func RefEdgeName(i int) string { return fmt.Sprintf("edgeconform-edge-%d", i+1) }

// startReference starts the emulators (with their control API) and the
// reference edge cache on the generated topology, all on loopback.
func startReference(ctx context.Context, prof topology.Profile, s Settings) (t *Target, err error) {
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()

	emus, err := StartEmulators(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	closers = append(closers, emus.Close)
	emu, controlURL, defaultIP := emus.Emulator, emus.ControlURL, emus.DefaultPortIP

	p := topology.Params{
		Profile: prof, ClientHost: refClientHost, OriginHost: refOriginHost, AltHost: refAltHost,
		RouteRewriteHost: refRouteRewrite, OriginRewriteHost: refOriginRewrit, GCSBucket: refBucket,
		Ports: emus.Ports, Reference: true, GCSToken: refGCSToken, S3: EmulatorS3(),
	}
	if defaultIP != "" {
		p.DefaultPortHost = refDefaultPort
	}
	cfg, err := topology.Build(p)
	if err != nil {
		return nil, err
	}
	yml, err := topology.ReferenceYAML(cfg)
	if err != nil {
		return nil, err
	}
	// The S3 secret, as edgecache serve --secrets DIR reads it.
	secretsDir, err := os.MkdirTemp("", "edgeconform-secrets-")
	if err != nil {
		return nil, err
	}
	closers = append(closers, func() { os.RemoveAll(secretsDir) })
	if err := os.WriteFile(filepath.Join(secretsDir, refS3SecretName), []byte(refS3Secret+"\n"), 0o600); err != nil {
		return nil, err
	}
	// Through YAML and validation, as edgecache serve --lab would.
	if cfg, err = config.Load(yml, config.Options{Lab: prof.Lab, Secrets: secrets.Dir(secretsDir)}); err != nil {
		return nil, fmt.Errorf("the generated topology does not validate: %w", err)
	}

	logs := &recorder{}
	log := slog.New(logjson.New(logs, nil)) // the JSON lines edgecache serve writes
	resolve := map[string]string{}
	for _, h := range []string{refOriginHost, refAltHost, refRouteRewrite, refOriginRewrit, refStorageHost} {
		resolve[h] = "127.0.0.1"
	}
	if defaultIP != "" {
		resolve[refDefaultPort] = defaultIP
	}
	client := upstream.New(upstream.Options{RootCAs: emu.CA().Pool(), Resolve: resolve, Logger: log})
	closers = append(closers, client.Close)
	gcsEndpoint := &url.URL{Scheme: "http", Host: net.JoinHostPort(refStorageHost, strconv.Itoa(p.Ports[topology.ListenerGCS]))}
	fetchOpt := edge.WithFetch(fetch.WithGCS(fetch.GCS{Endpoint: gcsEndpoint, Token: func() (string, error) { return refGCSToken, nil }}))
	// serve starts one node of the reference on a loopback port, assembled
	// and served as edgecache serve does (package node).
	serve := func(opts ...edge.Option) (string, error) {
		n, err := node.New(cfg, node.WithClient(client), node.WithLogger(log),
			node.WithHTTPErrorLog(slog.New(slog.DiscardHandler)), node.WithEdge(append([]edge.Option{fetchOpt}, opts...)...))
		if err != nil {
			return "", fmt.Errorf("starting the reference: %w", err)
		}
		closers = append(closers, n.Close)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("reference listener: %w", err)
		}
		srv := n.Serve(ln, nil)
		closers = append(closers, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if srv.Shutdown(sctx) != nil {
				srv.Close()
			}
		})
		return "http://" + ln.Addr().String(), nil
	}
	// The target's node is the shield of the edges (SHD-1); the region
	// shield fills shd-region's origin for them (SHD-2).
	mainURL, err := serve(edge.WithName(RefShieldName))
	if err != nil {
		return nil, err
	}
	regionURL, err := serve(edge.WithName(RefRegionShieldName))
	if err != nil {
		return nil, err
	}
	mu, _ := url.Parse(mainURL)
	ru, _ := url.Parse(regionURL)
	tiers := shield.Tiers{Default: mu, Regions: map[string]*url.URL{topology.ShieldRegion: ru}}
	var edges []string
	for i := range RefEdges {
		u, err := serve(edge.WithName(RefEdgeName(i)), edge.WithShields(tiers))
		if err != nil {
			return nil, err
		}
		edges = append(edges, u)
	}
	name := s.Name
	if name == "" {
		name = "reference"
	}
	return &Target{
		Name: name, Reference: true, URL: mainURL, Edges: edges,
		Control: emuclient.New(controlURL), ControlURL: controlURL,
		Params: p, Logs: logs, Config: yml, close: cleanup,
	}, nil
}

// defaultPortIP finds a loopback address where ports 80 and 443 can be
// bound (PRT-3), or "" when they cannot (not root). A random address of
// 127/8 keeps parallel suite processes apart.
func defaultPortIP() string {
	for range 5 {
		ip := fmt.Sprintf("127.%d.%d.%d", 100+rand.IntN(100), rand.IntN(250), 1+rand.IntN(250))
		ok := true
		for _, port := range []string{"80", "443"} {
			ln, err := net.Listen("tcp", net.JoinHostPort(ip, port))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			return ip
		}
	}
	return ""
}

// recorder keeps the JSON log records written to it.
type recorder struct {
	mu      sync.Mutex
	partial []byte
	records []Record
}

// maxRecords bounds what a recorder keeps (the oldest go first).
const maxRecords = 200000

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial = append(r.partial, p...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		line := r.partial[:i]
		var rec Record
		if err := json.Unmarshal(line, &rec); err == nil {
			r.records = append(r.records, rec)
		}
		r.partial = r.partial[i+1:]
	}
	if len(r.records) > maxRecords {
		r.records = append([]Record(nil), r.records[len(r.records)-maxRecords/2:]...)
	}
	return len(p), nil
}

func (r *recorder) Records(msg string) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Record
	for _, rec := range r.records {
		if msg == "" || rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}
