package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/edgeconform/edgeconform/internal/fielderr"
	"github.com/edgeconform/edgeconform/reference/cache/store"
	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/edge"
	"github.com/edgeconform/edgeconform/reference/fetch"
	"github.com/edgeconform/edgeconform/reference/headervars"
	"github.com/edgeconform/edgeconform/reference/logjson"
	"github.com/edgeconform/edgeconform/reference/logsink"
	"github.com/edgeconform/edgeconform/reference/node"
	"github.com/edgeconform/edgeconform/reference/receive"
	"github.com/edgeconform/edgeconform/reference/secrets"
	"github.com/edgeconform/edgeconform/reference/shield"
	"github.com/edgeconform/edgeconform/reference/upstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// shutdownGrace is how long in-flight requests get to finish on SIGTERM.
const shutdownGrace = 30 * time.Second

type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }

func usagef(format string, args ...any) error { return &usageError{fmt.Errorf(format, args...)} }

// parseFlags parses args; -h gives the flags' descriptions as the error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		return &usageError{fmt.Errorf("usage of %s:\n%s", fs.Name(), b.String())}
	}
	if err != nil {
		return &usageError{err}
	}
	return nil
}

// invalidError is a configuration that failed validation: every problem,
// one per line.
type invalidError struct {
	file string
	err  error
}

func (e *invalidError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: invalid configuration:", e.file)
	if es, ok := fielderr.As(e.err); ok {
		for _, fe := range es {
			fmt.Fprintf(&b, "\n  %s", fe.Error())
		}
		return b.String()
	}
	fmt.Fprintf(&b, "\n  %v", e.err)
	return b.String()
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// byteSize is a flag of bytes with an optional KiB, MiB or GiB suffix.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(v string) error {
	num, mult := v, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return fmt.Errorf("want a positive number of bytes, optionally with KiB, MiB or GiB, got %q", v)
	}
	*b = byteSize(n * mult)
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("want a command: serve or validate")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr)
	case "validate":
		return validate(args[1:], stdout)
	case "-h", "--help", "help":
		fmt.Fprintln(stdout, "usage: edgecache serve --config FILE|DIR... --listen ADDR [--lab] [--origin-ca PEM]... [--resolve HOST=IP]... [--admin ADDR]\n                       [--secrets DIR] [--max-header-bytes SIZE] [--max-header-fields N] [--max-url-bytes SIZE] [--h2-max-resets N]\n                       [--gcs-endpoint URL] [--gcs-token-file FILE]\n                       [--client-region CODE] [--client-region-subdivision CODE] [--client-city NAME] [--client-city-lat-long LAT,LONG]\n       edgecache validate --config FILE|DIR... [--lab] [--secrets DIR]\n       (both: [--allow-unimplemented] [--max-failover-chain N] [--max-hosts N] [--max-route-rules N])")
		return nil
	}
	return usagef("unknown command %q (want serve or validate)", args[0])
}

func validate(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var files multiFlag
	fs.Var(&files, "config", configUsage)
	lab := fs.Bool("lab", false, "relax the lower bounds of timeouts")
	dir := fs.String("secrets", "", "`DIR` holding the secrets awsV4Authentication names (checked when given)")
	var opts config.Options
	boundFlags(fs, &opts)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if len(files) == 0 || fs.NArg() > 0 {
		return usagef("validate needs --config FILE (repeatable, or a directory) and nothing else")
	}
	if err := checkBounds(opts); err != nil {
		return err
	}
	opts.Lab = *lab
	if *dir != "" {
		opts.Secrets = secrets.Dir(*dir)
	}
	cfg, err := config.LoadFiles(files, opts)
	if err != nil {
		return &invalidError{file: files.String(), err: err}
	}
	for _, u := range cfg.Unimplemented() {
		fmt.Fprintf(stdout, "warning: %s\n", u.Message())
	}
	fmt.Fprintf(stdout, "%s: valid\n", files.String())
	return nil
}

const configUsage = "configuration `FILE`: a combined file, or one gcloud-exported resource (repeatable; a directory reads its *.yaml, *.yml, *.json)"

// boundFlags registers the configuration bounds that are the reference's
// own (config.Options): failover chain, hosts and route rules.
func boundFlags(fs *flag.FlagSet, o *config.Options) {
	fs.IntVar(&o.MaxFailoverChain, "max-failover-chain", config.DefaultMaxFailoverChain, "at most `N` origins in a failover chain")
	fs.IntVar(&o.MaxHosts, "max-hosts", config.DefaultMaxHosts, "at most `N` hosts in the service's host rules")
	fs.IntVar(&o.MaxRouteRules, "max-route-rules", config.DefaultMaxRouteRules, "at most `N` route rules in the service")
	fs.BoolVar(&o.AllowUnimplemented, "allow-unimplemented", false, "accept Media CDN fields the reference does not implement (warning once per field)")
}

// checkBounds rejects bounds below 1.
func checkBounds(o config.Options) error {
	for _, b := range []struct {
		flag string
		v    int
	}{{"--max-failover-chain", o.MaxFailoverChain}, {"--max-hosts", o.MaxHosts}, {"--max-route-rules", o.MaxRouteRules}} {
		if b.v < 1 {
			return usagef("%s must be at least 1, got %d", b.flag, b.v)
		}
	}
	return nil
}

type serveFlags struct {
	files                          multiFlag
	listen, admin, logFormat       string
	geo                            headervars.Geo // --client-region etc.
	logLevel                       slog.Level
	secrets, gcsEndpoint, gcsToken string
	lab                            bool
	cas, resolves                  multiFlag
	cacheSize                      byteSize
	memoryLimit, gcFloor           sizeOrOff
	cacheDir, shield, name         string
	shieldRegions                  multiFlag
	maxFills                       int
	limits                         receive.Limits // the receive step's (--max-*, --h2-max-resets)
	http1Server                    string         // --http1-server
	bounds                         config.Options // the configuration's own bounds (boundFlags)
}

func parseServe(args []string) (*serveFlags, error) {
	f := &serveFlags{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Var(&f.files, "config", configUsage)
	fs.StringVar(&f.listen, "listen", "", "client-facing `ADDR` (host:port)")
	fs.StringVar(&f.admin, "admin", "", "`ADDR` for /healthz and /metrics")
	fs.StringVar(&f.logFormat, "log-format", "json", "json or text")
	fs.TextVar(&f.logLevel, "log-level", slog.LevelInfo, "lowest `LEVEL` logged: debug, info (one record per request), warn or error")
	fs.BoolVar(&f.lab, "lab", false, "relax the lower bounds of timeouts")
	fs.Var(&f.cas, "origin-ca", "PEM `FILE` of extra roots for origin TLS (repeatable)")
	fs.Var(&f.resolves, "resolve", "`HOST=IP` for an origin host (repeatable)")
	fs.StringVar(&f.secrets, "secrets", "", "`DIR` holding the secrets awsV4Authentication origins name")
	fs.StringVar(&f.gcsEndpoint, "gcs-endpoint", fetch.DefaultGCSEndpoint, "Cloud Storage XML API `URL` for gs:// origins")
	fs.StringVar(&f.gcsToken, "gcs-token-file", "", "`FILE` with the bearer token for gs:// origins")
	f.cacheSize = edge.DefaultStoreBytes
	fs.Var(&f.cacheSize, "cache-size", "cache `SIZE` in bytes (suffixes KiB, MiB, GiB; default 256MiB)")
	fs.Var(&f.memoryLimit, "memory-limit", "the Go runtime's soft memory `LIMIT` (KiB, MiB, GiB, or off; default: --cache-size + 32MiB, or GOMEMLIMIT)")
	fs.Var(&f.gcFloor, "gc-floor", "let the heap grow at least `SIZE` past its live bytes between collections (KiB, MiB, GiB, or off; default 16MiB unless GOGC is set)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "`DIR` for a disk cache (default: memory)")
	fs.StringVar(&f.shield, "shield", "", "parent tier: fill cache misses from the edgecache node at `URL` (SHD-1)")
	fs.Var(&f.shieldRegions, "shield-region", "`REGION=URL`: fills for origins with that flexShielding region go to URL (repeatable; SHD-2)")
	fs.StringVar(&f.name, "name", edge.DefaultName, "this node's `NAME` in Cache-Status")
	fs.StringVar(&f.http1Server, "http1-server", node.H1Serve, "the client-facing HTTP/1.1 `SERVER`: h1serve (the reference's own) or net/http (the fallback, net/http's server)")
	fs.IntVar(&f.maxFills, "max-fills", edge.DefaultMaxFills, "fills in flight at most (`N`; a miss past it gets 503 with Retry-After; 0: no bound)")
	boundFlags(fs, &f.bounds)
	geoFlags(fs, &f.geo)
	f.limits = receive.DefaultLimits()
	headerBytes, urlBytes := byteSize(f.limits.MaxHeaderBytes), byteSize(f.limits.MaxURLBytes)
	fs.Var(&headerBytes, "max-header-bytes", "request header fields above `SIZE` get 431 (default 64KiB)")
	fs.IntVar(&f.limits.MaxHeaderFields, "max-header-fields", f.limits.MaxHeaderFields, "more request header fields than `N` get 431")
	fs.Var(&urlBytes, "max-url-bytes", "a request target above `SIZE` gets 414 (default 16KiB)")
	fs.IntVar(&f.limits.H2MaxResets, "h2-max-resets", f.limits.H2MaxResets, "an h2 client resetting more than `N` streams in 10s gets GOAWAY ENHANCE_YOUR_CALM (0: no limit)")
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	if err := checkBounds(f.bounds); err != nil {
		return nil, err
	}
	f.limits.MaxHeaderBytes, f.limits.MaxURLBytes = int(min(headerBytes, 1<<30)), int(min(urlBytes, 1<<30))
	if err := f.limits.Validate(); err != nil {
		return nil, usagef("request limits (--max-header-bytes, --max-header-fields, --max-url-bytes, --h2-max-resets): %v", err)
	}
	if f.http1Server != node.H1Serve && f.http1Server != node.NetHTTP {
		return nil, usagef("--http1-server %q: want %s or %s", f.http1Server, node.H1Serve, node.NetHTTP)
	}
	switch {
	case fs.NArg() > 0:
		return nil, usagef("unexpected argument %q", fs.Arg(0))
	case len(f.files) == 0:
		return nil, usagef("serve needs --config FILE")
	case f.listen == "":
		return nil, usagef("serve needs --listen ADDR")
	case f.logFormat != "json" && f.logFormat != "text":
		return nil, usagef("--log-format must be json or text, got %q", f.logFormat)
	}
	if _, err := fetch.ParseGCSEndpoint(f.gcsEndpoint); err != nil {
		return nil, usagef("--gcs-endpoint %v", err)
	}
	if f.maxFills < 0 {
		return nil, usagef("--max-fills must be >= 0, got %d", f.maxFills)
	}
	if f.name == "" || strings.ContainsAny(f.name, ",;= \t\"") {
		return nil, usagef("--name %q: want a token (no spaces, commas, semicolons, quotes or '=')", f.name)
	}
	if _, err := f.tiers(); err != nil {
		return nil, err
	}
	for _, g := range []struct{ flag, v string }{{"--client-region", f.geo.Region}, {"--client-region-subdivision", f.geo.Subdivision}, {"--client-city", f.geo.City}, {"--client-city-lat-long", f.geo.CityLatLong}} {
		if strings.ContainsFunc(g.v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return nil, usagef("%s %q: must not contain control characters (it goes into response headers)", g.flag, g.v)
		}
	}
	return f, nil
}

// tiers is the parent tier configuration (--shield, --shield-region).
func (f *serveFlags) tiers() (shield.Tiers, error) {
	var t shield.Tiers
	if f.shield != "" {
		u, err := shield.ParseURL(f.shield)
		if err != nil {
			return t, usagef("--shield: %v", err)
		}
		t.Default = u
	}
	for _, r := range f.shieldRegions {
		region, raw, ok := strings.Cut(r, "=")
		if !ok || !config.ValidShieldingRegion(region) {
			return t, usagef("--shield-region %q: want REGION=URL with a flexShielding region such as AFRICA_SOUTH1", r)
		}
		u, err := shield.ParseURL(raw)
		if err != nil {
			return t, usagef("--shield-region %s: %v", region, err)
		}
		if t.Regions == nil {
			t.Regions = map[string]*url.URL{}
		}
		if _, dup := t.Regions[region]; dup {
			return t, usagef("--shield-region %s given twice", region)
		}
		t.Regions[region] = u
	}
	return t, nil
}

// cacheStore is the cache's storage (--cache-size, --cache-dir).
func (f *serveFlags) cacheStore() (store.Store, error) {
	if f.cacheDir == "" {
		return store.NewMemory(int64(f.cacheSize)), nil
	}
	d, err := store.NewDisk(f.cacheDir, int64(f.cacheSize))
	if err != nil {
		return nil, fmt.Errorf("--cache-dir: %w", err)
	}
	return d, nil
}

func (f *serveFlags) upstreamOptions(log *slog.Logger) (upstream.Options, error) {
	opts := upstream.Options{Logger: log, Resolve: map[string]string{}}
	for _, r := range f.resolves {
		host, ip, ok := strings.Cut(r, "=")
		if !ok || host == "" || net.ParseIP(ip) == nil {
			return opts, usagef("--resolve %q: want HOST=IP", r)
		}
		opts.Resolve[strings.ToLower(host)] = ip
	}
	if len(f.cas) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		for _, file := range f.cas {
			pem, err := os.ReadFile(file)
			if err != nil {
				return opts, usagef("--origin-ca: %v", err)
			}
			if !pool.AppendCertsFromPEM(pem) {
				return opts, usagef("--origin-ca %s: no PEM certificate in it", file)
			}
		}
		opts.RootCAs = pool
	}
	return opts, nil
}

// gcs is how gs:// origins are reached (--gcs-endpoint, --gcs-token-file).
func (f *serveFlags) gcs() (fetch.GCS, error) {
	var g fetch.GCS
	ep, err := fetch.ParseGCSEndpoint(f.gcsEndpoint)
	if err != nil {
		return g, usagef("--gcs-endpoint %v", err)
	}
	g.Endpoint = ep
	if f.gcsToken != "" {
		tok, err := secrets.NewFile(f.gcsToken)
		if err != nil {
			return g, fmt.Errorf("--gcs-token-file: %w", err)
		}
		g.Token = tok.Value
	}
	return g, nil
}

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseServe(args)
	if err != nil {
		return err
	}
	// Records go through an asynchronous buffered sink, so no request waits
	// on stderr; Close (last, after the servers and the cache) writes what is
	// pending.
	sink := logsink.New(stderr, logsink.Options{})
	defer sink.Close()
	log := f.logger(sink)
	cfg, err := f.loadConfig(log)
	if err != nil {
		return err
	}
	defer applyMemoryLimit(f.memoryLimit, int64(f.cacheSize), log)()
	stopFloor, err := applyGCFloor(f.gcFloor, log)
	if err != nil {
		return err
	}
	defer stopFloor()
	n, err := f.node(cfg, log)
	if err != nil {
		return err
	}
	metrics := n.Metrics()
	metrics.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "edgecache_log_records_dropped_total",
		Help: "Log records dropped because the log's destination fell behind (the sink's bound of pending bytes was full).",
	}, func() float64 { return float64(sink.Dropped()) }))
	defer n.Close() // after the servers' Shutdown below: in-flight requests finish first
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	errs := make(chan error, 2)
	srv := n.Serve(ln, errs) // HTTP/1.1 and h2c through the receive step
	servers := []node.Server{srv}
	fmt.Fprintf(stdout, "listening http://%s\n", ln.Addr())
	if f.admin != "" {
		asrv, err := serveAdmin(f.admin, metrics.Registry, errs, stdout)
		if err != nil {
			srv.Close()
			return err
		}
		servers = append(servers, asrv)
	}
	log.Info("edgecache serving", "listen", ln.Addr().String(), "config", f.files.String(), "lab", f.lab)
	select {
	case err := <-errs:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("edgecache shutting down: finishing in-flight requests")
	return shutdown(servers)
}

// logger is the log (--log-format, --log-level) writing to sink.
func (f *serveFlags) logger(sink io.Writer) *slog.Logger {
	hopts := &slog.HandlerOptions{Level: f.logLevel}
	if f.logFormat == "text" {
		return slog.New(slog.NewTextHandler(sink, hopts))
	}
	return slog.New(logjson.New(sink, hopts)) // slog.JSONHandler's lines, faster (issue #14)
}

// loadConfig loads --config with its secrets; with --allow-unimplemented
// it warns once for each not-implemented Media CDN field set.
func (f *serveFlags) loadConfig(log *slog.Logger) (*config.Config, error) {
	store := secrets.None
	if f.secrets != "" {
		store = secrets.Dir(f.secrets)
	}
	opts := f.bounds
	opts.Lab, opts.Secrets = f.lab, store
	cfg, err := config.LoadFiles(f.files, opts)
	if err != nil {
		return nil, &invalidError{file: f.files.String(), err: err}
	}
	for _, u := range cfg.Unimplemented() {
		log.Warn(u.Message(), "field", u.Field, "api_field", u.Path)
	}
	return cfg, nil
}

// node assembles the edge cache node from the flags.
func (f *serveFlags) node(cfg *config.Config, log *slog.Logger) (*node.Node, error) {
	uopts, err := f.upstreamOptions(log)
	if err != nil {
		return nil, err
	}
	gcs, err := f.gcs()
	if err != nil {
		return nil, err
	}
	st, err := f.cacheStore()
	if err != nil {
		return nil, err
	}
	tiers, _ := f.tiers() // checked by parseServe
	return node.New(cfg, node.WithLogger(log), node.WithUpstream(uopts), node.WithLimits(f.limits),
		node.WithHTTP1Server(f.http1Server),
		node.WithEdge(edge.WithFetch(fetch.WithGCS(gcs)), edge.WithStore(st), edge.WithName(f.name),
			edge.WithShields(tiers), edge.WithMaxFills(maxFills(f.maxFills)), edge.WithGeo(f.geo)))
}

// serveAdmin serves /healthz, /metrics and /debug/pprof (profiles and the
// execution trace) on addr.
func serveAdmin(addr string, reg *prometheus.Registry, errs chan<- error, stdout io.Writer) (*http.Server, error) {
	aln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--admin: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /debug/pprof/", pprof.Index) // heap, goroutine, ... profiles (the soak reads the heap)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace) // go tool trace: the scheduler's view under load
	asrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { errs <- asrv.Serve(aln) }()
	fmt.Fprintf(stdout, "admin http://%s\n", aln.Addr())
	return asrv, nil
}

// shutdown lets in-flight requests finish (up to shutdownGrace).
func shutdown(servers []node.Server) error {
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	var first error
	for _, s := range servers {
		if err := s.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) && first == nil {
			first = fmt.Errorf("shutting down: %w", err)
		}
	}
	return first
}

// geoFlags registers the client geography the header variables render
// ({client_region} etc.): the reference has no IP geolocation, so every
// client gets these values ("" when not given).
func geoFlags(fs *flag.FlagSet, g *headervars.Geo) {
	fs.StringVar(&g.Region, "client-region", "", "{client_region} for every client: a Unicode CLDR region `CODE` such as US or FR (default: empty)")
	fs.StringVar(&g.Subdivision, "client-region-subdivision", "", "{client_region_subdivision}: a CLDR subdivision `CODE` such as USCA")
	fs.StringVar(&g.City, "client-city", "", "{client_city}: a city `NAME`")
	fs.StringVar(&g.CityLatLong, "client-city-lat-long", "", "{client_city_lat_long}: `LAT,LONG`")
}

// maxFills maps --max-fills (0: no bound) to edge.WithMaxFills's argument.
func maxFills(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
