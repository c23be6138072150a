package main

import (
	"reflect"

	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/edgeconform/edgeconform/internal/fielderr"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/edgeconform/edgeconform/emulators/control"
	"github.com/edgeconform/edgeconform/emulators/originemu"
)

// Addresses used when nothing says otherwise.
const (
	defaultControl         = "127.0.0.1:9000"
	defaultsControl        = "127.0.0.1:18000" // with the default listener set
	defaultsFirstPort      = 18080
	defaultListenerAddrFmt = "127.0.0.1:%d"
	shutdownTimeout        = 5 * time.Second
)

// defaultProfiles are the default listener set, in port order from
// defaultsFirstPort (the table in the package comment).
func defaultProfiles() []originemu.Profile {
	return []originemu.Profile{
		originemu.HTTP, originemu.H2C, originemu.HTTPS, originemu.H2,
		originemu.TLSExpired, originemu.TLSWrongName, originemu.TLSUntrusted,
		originemu.Refuse, originemu.Blackhole, originemu.SYNDrop,
	}
}

func defaultListeners() []originemu.ListenerConfig {
	var out []originemu.ListenerConfig
	for i, p := range defaultProfiles() {
		out = append(out, originemu.ListenerConfig{Name: string(p), Profile: p, Addr: fmt.Sprintf(defaultListenerAddrFmt, defaultsFirstPort+i)})
	}
	return out
}

// usageError is a bad flag or configuration: exit status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{err: fmt.Errorf(format, args...)}
}

// fileConfig is what --config holds.
type fileConfig struct {
	// Control is the control API's address.
	Control string `json:"control,omitempty"`
	// Backends maps a listener name to the bucket service it runs.
	Backends map[string]backendConfig `json:"backends,omitempty"`
	originemu.Config
}

// setup is everything the flags and the config file say.
type setup struct {
	cfg       originemu.Config
	control   string
	caOut     string
	logFormat string
	logLevel  slog.Level
}

// listenFlag collects --listen values.
type listenFlag struct{ ls *[]originemu.ListenerConfig }

func (f listenFlag) String() string { return "" }

func (f listenFlag) Set(v string) error {
	lc, err := parseListen(v)
	if err != nil {
		return err
	}
	*f.ls = append(*f.ls, lc)
	return nil
}

// parseListen reads NAME=PROFILE[@ADDR].
func parseListen(v string) (originemu.ListenerConfig, error) {
	name, rest, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return originemu.ListenerConfig{}, errors.New("want NAME=PROFILE[@ADDR], e.g. web=http@127.0.0.1:8080")
	}
	profile, addr, hasAddr := strings.Cut(rest, "@")
	lc := originemu.ListenerConfig{Name: name, Profile: originemu.Profile(profile), Addr: addr}
	if !slices.Contains(originemu.Profiles, lc.Profile) {
		names := make([]string, len(originemu.Profiles))
		for i, p := range originemu.Profiles {
			names[i] = string(p)
		}
		return lc, fmt.Errorf("unknown profile %q (want one of %s)", profile, strings.Join(names, ", "))
	}
	if hasAddr {
		if err := checkAddr(addr); err != nil {
			return lc, err
		}
	} else {
		lc.Addr = "127.0.0.1:0"
	}
	return lc, nil
}

// checkAddr checks a host:port to listen on.
func checkAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q is not HOST:PORT: %w", addr, err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return fmt.Errorf("address %q: port %q is not a number 0-65535", addr, port)
	}
	return nil
}

// parseArgs reads the flags and the config file.
func parseArgs(args []string, stdout io.Writer) (*setup, error) {
	fs := flag.NewFlagSet("originemu", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported once, by the caller
	var (
		s          = &setup{}
		listeners  []originemu.ListenerConfig
		controlA   = fs.String("control", defaultControl, "`ADDR` of the control API (host:port; port 0 picks a free one; "+defaultsControl+" with the default listener set)")
		configFile = fs.String("config", "", "YAML or JSON `FILE` with an originemu.Config and a top-level control address")
		caOut      = fs.String("ca-out", "", "write the test CA certificate as PEM to `FILE`")
		cert       = fs.String("cert", "", "certificate `FILE` (PEM) for the TLS serving listeners instead of one from the test CA; needs --key")
		key        = fs.String("key", "", "private key `FILE` (PEM) for --cert")
		journalCap = fs.Int("journal-cap", 0, "keep at most `N` connections and N requests in the journal (0: the default)")
		defaults   = fs.Bool("defaults", false, "start the default listener set (also the case when no listener is given)")
		logFormat  = fs.String("log-format", "text", "log `FORMAT` on standard error: text or json")
		logLevel   = fs.String("log-level", "info", "log `LEVEL`: debug, info, warn or error")
	)
	fs.Var(listenFlag{&listeners}, "listen", "add a listener `NAME=PROFILE[@ADDR]` (repeatable; ADDR defaults to 127.0.0.1:0)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, stdout)
			return nil, err
		}
		return nil, &usageError{err: err}
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q (every option is a flag)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var fc fileConfig
	if *configFile != "" {
		b, err := os.ReadFile(*configFile)
		if err != nil {
			return nil, usagef("--config: %w", err)
		}
		if err := yaml.UnmarshalStrict(b, &fc); err != nil {
			// Name the field by its path where possible.
			if j, jerr := yaml.YAMLToJSON(b); jerr == nil {
				if es := fielderr.CheckJSON(j, reflect.TypeFor[fileConfig](), "", "config"); len(es) > 0 {
					return nil, usagef("--config %s: %v", *configFile, es)
				}
			}
			return nil, usagef("--config %s: %w", *configFile, err)
		}
		if fc.Control != "" {
			if err := checkAddr(fc.Control); err != nil {
				return nil, usagef("--config %s: control: %w", *configFile, err)
			}
		}
	}
	s.cfg = fc.Config
	if err := attachBackends(&s.cfg, fc.Backends); err != nil {
		return nil, usagef("--config %s: %w", *configFile, err)
	}

	if set["cert"] != set["key"] {
		return nil, usagef("--cert and --key must be given together")
	}
	if set["cert"] {
		s.cfg.CertFile, s.cfg.KeyFile = *cert, *key
	}
	if set["journal-cap"] {
		if *journalCap < 0 {
			return nil, usagef("--journal-cap: must be >= 0, got %d", *journalCap)
		}
		s.cfg.JournalCapacity = *journalCap
	}
	useDefaults := *defaults || (len(s.cfg.Listeners) == 0 && len(listeners) == 0)
	if useDefaults {
		s.cfg.Listeners = append(defaultListeners(), s.cfg.Listeners...)
	}
	s.cfg.Listeners = append(s.cfg.Listeners, listeners...)

	switch {
	case set["control"]:
		if err := checkAddr(*controlA); err != nil {
			return nil, usagef("--control: %w", err)
		}
		s.control = *controlA
	case fc.Control != "":
		s.control = fc.Control
	case useDefaults:
		s.control = defaultsControl
	default:
		s.control = defaultControl
	}

	s.caOut = *caOut
	switch *logFormat {
	case "text", "json":
		s.logFormat = *logFormat
	default:
		return nil, usagef("--log-format: want text or json, got %q", *logFormat)
	}
	if err := s.logLevel.UnmarshalText([]byte(*logLevel)); err != nil {
		return nil, usagef("--log-level: want debug, info, warn or error, got %q", *logLevel)
	}
	return s, nil
}

func printUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: originemu [flags]\n\nRuns a fault-injecting origin emulator with a JSON control API.\nWithout any listener it starts the default set (see go doc).\n\nFlags:\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

func (s *setup) logger(stderr io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: s.logLevel}
	if s.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(stderr, opts))
	}
	return slog.New(slog.NewTextHandler(stderr, opts))
}

// run starts the emulator and its control API as args say, prints their
// URLs to stdout, and serves until ctx ends; then it shuts down.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	s, err := parseArgs(args, stdout)
	if err != nil {
		return err
	}
	log := s.logger(stderr)
	s.cfg.Logger = log

	e, err := originemu.New(s.cfg)
	if err != nil {
		return &usageError{err: err}
	}
	// The emulator and the control server stop when run says so, after
	// ctx ends, not at once.
	base := context.WithoutCancel(ctx)
	if err := e.Start(base); err != nil {
		return fmt.Errorf("starting the emulator: %w", err)
	}
	defer e.Close()

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.control)
	if err != nil {
		return fmt.Errorf("listening for the control API on %s: %w", s.control, err)
	}
	if s.caOut != "" {
		if err := os.WriteFile(s.caOut, e.CAPEM(), 0o644); err != nil {
			ln.Close()
			return fmt.Errorf("writing the CA certificate (--ca-out): %w", err)
		}
	}

	srvCtx, cancelSrv := context.WithCancel(base)
	defer cancelSrv()
	srv := &http.Server{
		Handler:           control.NewHandler(e, log),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return srvCtx },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	controlURL := "http://" + ln.Addr().String()
	var out strings.Builder
	for _, l := range e.Listeners() {
		fmt.Fprintf(&out, "%s %s %s\n", l.Name, l.Profile, l.URL)
	}
	fmt.Fprintf(&out, "control %s\n", controlURL)
	if _, err := io.WriteString(stdout, out.String()); err != nil {
		log.Warn("originemu could not write its URLs to standard output", "err", err)
	}
	log.Info("originemu ready", "control", controlURL, "listeners", len(e.Listeners()))

	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("serving the control API: %w", err)
	}
	log.Info("originemu shutting down", "cause", context.Cause(ctx))
	// End long polls first, so Shutdown need not wait for them.
	cancelSrv()
	shCtx, cancel := context.WithTimeout(base, shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shCtx); err != nil {
		log.Warn("originemu control API did not shut down in time", "err", err)
		srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("originemu control API stopped with an error", "err", err)
	}
	if err := e.Close(); err != nil {
		return fmt.Errorf("closing the emulator: %w", err)
	}
	log.Info("originemu stopped")
	return nil
}
