// Command conformance-topology generates the conformance topology (package
// topology) for a target:
//
//	# the reference's configuration, ports read from running emulators
//	go run ./suites/cmd/conformance-topology -format reference -control http://127.0.0.1:18000 \
//	    -origin-host 127.0.0.1 -client-host cdn.example.com -profile lab -out topo/
//	# Media CDN import YAML (EdgeCacheOrigin / EdgeCacheService) for a real deployment
//	go run ./suites/cmd/conformance-topology -format mediacdn -profile strict \
//	    -origin-host origins.example.net -client-host cdn.example.com -project my-project \
//	    -ports a=18080,b=18081,... -out topo/
//
// It writes the configuration and topology.json: the parameters the suites
// need (EDGECONFORM_TOPOLOGY=topo/topology.json) and the neutral topology
// (topology.Neutral, schema suites/topology/schema/topology-v1.schema.json),
// every scenario as data, for generators of other implementations.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/emulators/emuclient"
	"github.com/edgeconform/edgeconform/suites/target"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// envS3Secret holds the S3 bucket emulator's test secret key for -s3.
const envS3Secret = "EDGECONFORM_S3_SECRET"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-topology:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("conformance-topology", flag.ContinueOnError)
	format := fs.String("format", "mediacdn", "`reference` (one YAML for edgecache serve) or mediacdn (gcloud import YAML)")
	profile := fs.String("profile", "strict", "timing profile: lab (reference --lab only) or strict")
	out := fs.String("out", "", "output `DIR` (required)")
	control := fs.String("control", "", "emulator control API `URL`: read the listeners' ports from it")
	ports := fs.String("ports", "", "listener ports as the target reaches them: `NAME=PORT,...` (over -control's)")
	clientHost := fs.String("client-host", "", "the Host clients send (the service's host rule; required)")
	originHost := fs.String("origin-host", "", "name or IP at which the target reaches the emulators (required)")
	altHost := fs.String("alt-host", "", "another name for the emulators, for redirect Locations (default -origin-host)")
	routeRW := fs.String("route-rewrite-host", "", "the routes' hostRewrite (default -origin-host)")
	originRW := fs.String("origin-rewrite-host", "", "the origins' hostRewrite (default -origin-host)")
	defaultPortHost := fs.String("default-port-host", "", "name of emulators listening on ports 80 and 443 (PRT-3; optional)")
	project := fs.String("project", "", "Google Cloud project: full resource names for origins (mediacdn)")
	s3 := fs.String("s3", "", "the S3-compatible bucket emulator (the s3 listener) for the BKT scenarios: "+
		"`BUCKET:REGION:ACCESS_KEY_ID:SECRET_VERSION`; its secret key (the emulator's test key) in $"+envS3Secret)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *clientHost == "" || *originHost == "" {
		return fmt.Errorf("-out, -client-host and -origin-host are required")
	}
	prof, err := topology.ProfileByName(*profile)
	if err != nil {
		return err
	}
	or := func(s, def string) string {
		if s == "" {
			return def
		}
		return s
	}
	p := topology.Params{
		Profile: prof, ClientHost: *clientHost, OriginHost: *originHost, AltHost: or(*altHost, *originHost),
		RouteRewriteHost: or(*routeRW, *originHost), OriginRewriteHost: or(*originRW, *originHost),
		DefaultPortHost: *defaultPortHost, Project: *project, Ports: map[string]int{},
	}
	if *control != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if p.Ports, err = target.ListenerPorts(ctx, emuclient.New(*control)); err != nil {
			return err
		}
	}
	if *ports != "" {
		for _, kv := range strings.Split(*ports, ",") {
			name, port, ok := strings.Cut(strings.TrimSpace(kv), "=")
			n, err := strconv.Atoi(port)
			if !ok || err != nil || n <= 0 || n > 65535 {
				return fmt.Errorf("-ports %q: want NAME=PORT", kv)
			}
			p.Ports[name] = n
		}
	}
	if *s3 != "" {
		parts := strings.Split(*s3, ":")
		if len(parts) != 4 || slices.Contains(parts, "") {
			return fmt.Errorf("-s3 %q: want BUCKET:REGION:ACCESS_KEY_ID:SECRET_VERSION", *s3)
		}
		secret := os.Getenv(envS3Secret)
		if secret == "" {
			return fmt.Errorf("-s3 needs the bucket emulator's test secret key in $%s (the suites sign their uploads with it)", envS3Secret)
		}
		p.S3 = &topology.S3Bucket{Bucket: parts[0], Region: parts[1], AccessKeyID: parts[2], SecretVersion: parts[3], Secret: secret}
	}
	var files []topology.File
	switch *format {
	case "reference":
		p.Reference = true
		cfg, err := topology.Build(p)
		if err != nil {
			return err
		}
		y, err := topology.ReferenceYAML(cfg)
		if err != nil {
			return err
		}
		files = append(files, topology.File{Name: "edgecache.yaml", Data: y})
	case "mediacdn":
		if prof.Lab {
			return fmt.Errorf("the lab profile has sub-second timeouts Media CDN rejects: use -profile strict")
		}
		cfg, err := topology.Build(p)
		if err != nil {
			return err
		}
		if files, err = topology.MediaCDN(cfg); err != nil {
			return err
		}
	default:
		return fmt.Errorf("-format %q: want reference or mediacdn", *format)
	}
	// topology.json: the parameters the suites read and every scenario as
	// data (the neutral topology peer generators read).
	n, err := topology.BuildNeutral(p)
	if err != nil {
		return err
	}
	pj, err := topology.NeutralJSON(n)
	if err != nil {
		return err
	}
	files = append(files, topology.File{Name: topology.ParamsFile, Data: pj})
	if err := topology.WriteFiles(*out, files); err != nil {
		return err
	}
	for _, f := range files {
		fmt.Fprintln(stdout, filepath.Join(*out, f.Name))
	}
	return nil
}
