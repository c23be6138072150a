// Package node assembles one reference edge cache node, once, for the CLI
// (edgecache serve), the suites' in-process target and the tests:
// configuration -> router -> fetch engine -> store -> edge -> shield, with
// the upstream client, the metrics and the receive step's limits, in the
// spirit of go-httpbin's New(opts...) returning an http.Handler.
//
//	n, err := node.New(cfg, node.WithLogger(log), node.WithUpstream(upstream.Options{RootCAs: pool}),
//		node.WithEdge(edge.WithName("edge-1"), edge.WithShields(tiers)))
//	defer n.Close()
//	srv := n.Serve(ln, nil) // HTTP/1.1 (reference/h1serve) and h2c through the receive step
//	defer srv.Shutdown(ctx)
//
// WithHTTP1Server(node.NetHTTP) serves HTTP/1.1 on net/http's server
// behind receive.Listener instead, as before issue #14 (edgecache serve
// --http1-server=net/http): the fallback for a client that trips on
// h1serve.
//
// A Node is an http.Handler (the edge); Close releases, in order, the
// cache and running fills, then the upstream client if the node made it.
package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/reference/edge"
	"github.com/edgeconform/edgeconform/reference/h1serve"
	"github.com/edgeconform/edgeconform/reference/receive"
	"github.com/edgeconform/edgeconform/reference/upstream"
)

// Option configures [New].
type Option func(*options)

type options struct {
	log      *slog.Logger
	client   *upstream.Client
	upstream upstream.Options
	metrics  *edge.Metrics
	limits   *receive.Limits
	edge     []edge.Option
	httpLog  *slog.Logger
	http1    string
}

// The HTTP/1.1 servers WithHTTP1Server selects.
const (
	H1Serve = "h1serve"  // reference/h1serve: the default
	NetHTTP = "net/http" // net/http's server behind receive.Listener
)

// WithHTTP1Server selects the server Serve answers HTTP/1.1 with: H1Serve
// (default) or NetHTTP; New refuses another name.
func WithHTTP1Server(name string) Option { return func(o *options) { o.http1 = name } }

// WithLogger sets the node's logger (default slog.Default()); the
// upstream client the node makes logs there too.
func WithLogger(log *slog.Logger) Option { return func(o *options) { o.log = log } }

// WithUpstream sets the options of the upstream client the node makes (and
// closes): origin CAs, --resolve mappings, ... Its Logger defaults to the
// node's.
func WithUpstream(uo upstream.Options) Option { return func(o *options) { o.upstream = uo } }

// WithClient makes the node use c, which its owner closes, instead of a
// client of its own (nodes of one process may share one).
func WithClient(c *upstream.Client) Option { return func(o *options) { o.client = c } }

// WithMetrics makes the node count into m instead of a fresh edge.NewMetrics.
func WithMetrics(m *edge.Metrics) Option { return func(o *options) { o.metrics = m } }

// WithLimits sets the receive step's limits, for the edge and for Serve
// (default receive.DefaultLimits()).
func WithLimits(l receive.Limits) Option { return func(o *options) { o.limits = &l } }

// WithHTTPErrorLog sets where Serve's http.Server logs its own errors (at
// warning level; default the node's logger).
func WithHTTPErrorLog(log *slog.Logger) Option { return func(o *options) { o.httpLog = log } }

// WithEdge passes options on to edge.New (WithStore, WithName,
// WithShields, WithFetch, WithMaxFills).
func WithEdge(eo ...edge.Option) Option {
	return func(o *options) { o.edge = append(o.edge, eo...) }
}

// Node is one assembled node.
type Node struct {
	*edge.Server
	metrics   *edge.Metrics
	log       *slog.Logger
	httpLog   *slog.Logger
	limits    receive.Limits
	http1     string
	client    *upstream.Client
	ownClient bool
}

// New assembles a node for a validated configuration (with its secrets
// resolved, if it has awsV4Authentication origins: config.Options.Secrets).
func New(cfg *config.Config, opts ...Option) (*Node, error) {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	n := &Node{log: o.log, metrics: o.metrics, client: o.client, httpLog: o.httpLog, http1: o.http1}
	switch n.http1 {
	case "":
		n.http1 = H1Serve
	case H1Serve, NetHTTP:
	default:
		return nil, fmt.Errorf("assembling the node: HTTP/1.1 server %q: want %q or %q", o.http1, H1Serve, NetHTTP)
	}
	if n.log == nil {
		n.log = slog.Default()
	}
	if n.httpLog == nil {
		n.httpLog = n.log
	}
	if n.metrics == nil {
		n.metrics = edge.NewMetrics()
	}
	n.limits = receive.DefaultLimits()
	if o.limits != nil {
		n.limits = *o.limits
	}
	if n.client == nil {
		uo := o.upstream
		if uo.Logger == nil {
			uo.Logger = n.log
		}
		n.client, n.ownClient = upstream.New(uo), true
	}
	srv, err := edge.New(cfg, n.client, n.log, n.metrics, append(o.edge, edge.WithLimits(n.limits))...)
	if err != nil {
		if n.ownClient {
			n.client.Close()
		}
		return nil, fmt.Errorf("assembling the node: %w", err)
	}
	n.Server = srv
	n.metrics.RegisterCache(srv)
	return n, nil
}

// Metrics are the node's Prometheus series (for an admin endpoint).
func (n *Node) Metrics() *edge.Metrics { return n.metrics }

// Server is what Serve returns: the client-facing server, to shut down.
type Server interface {
	Shutdown(context.Context) error
	Close() error
}

// Serve answers clients on ln in a goroutine, as edgecache serve does:
// HTTP/1.1 and h2c with prior knowledge (so clients can see RST_STREAM
// truncation), through the receive step's raw checks and limits, on
// reference/h1serve (or net/http's server: WithHTTP1Server). errs, if not
// nil, receives what Serve returned when it ends (http.ErrServerClosed
// after Shutdown). Shut the returned server down before Close.
func (n *Node) Serve(ln net.Listener, errs chan<- error) Server {
	h2 := &http.Server{Handler: n, ReadHeaderTimeout: readHeaderTimeout,
		ErrorLog: slog.NewLogLogger(n.httpLog.Handler(), slog.LevelWarn)}
	receive.Configure(h2, n.limits, n.log)
	serve := func() error { return h2.Serve(receive.Listener(ln, n.limits, n.log)) }
	var srv Server = h2
	if n.http1 == H1Serve {
		hs := &h1serve.Server{Handler: n, Limits: n.limits, ReadHeaderTimeout: readHeaderTimeout,
			IdleTimeout: idleTimeout, Logger: n.log, H2: h2}
		serve, srv = func() error { return hs.Serve(ln) }, hs
	}
	go func() {
		err := serve()
		if errs != nil {
			errs <- err
		}
	}()
	return srv
}

// The client-facing timeouts: a connection's first head, and the wait
// for each next one on a keep-alive connection (nginx's keepalive_timeout
// default; net/http's server here had none).
const (
	readHeaderTimeout = 30 * time.Second
	idleTimeout       = 75 * time.Second
)

// Close stops running fills, releases the cache and, if the node made
// it, the upstream client. Call it after the HTTP servers shut down.
func (n *Node) Close() {
	n.Server.Close()
	if n.ownClient {
		n.client.Close()
	}
}
