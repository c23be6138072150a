// Package originemu is a fault-injecting origin server for testing CDNs and
// edge caches. One Emulator runs several listeners, each with a profile
// (http, https, h2, h2c, TLS faults, connection faults); rules script the
// answer to matching requests (delays, statuses, slow or broken bodies,
// resets, h2 RST_STREAM and GOAWAY, redirects, bad validators, barriers);
// without a rule it serves synthetic objects with correct Range and
// conditional-request handling; and a journal records every connection and
// request it received.
//
// It runs in-process (New, Start, then the Go API) or as the originemu
// command with a JSON control API (package control) and a Go client for it
// (package emuclient).
package originemu

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgeconform/edgeconform/emulators/emuapi"
	"github.com/edgeconform/edgeconform/emulators/journal"
	"github.com/edgeconform/edgeconform/emulators/objects"
	"github.com/edgeconform/edgeconform/emulators/proxy"
	"github.com/edgeconform/edgeconform/emulators/rules"
	"github.com/edgeconform/edgeconform/emulators/testca"
	"github.com/edgeconform/edgeconform/emulators/wire"
	"github.com/edgeconform/edgeconform/emulators/wire/h2"
	"github.com/edgeconform/edgeconform/emulators/wire/http1"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

// Config says which listeners to run and what to load at start.
type Config struct {
	Listeners []ListenerConfig `json:"listeners"`
	// JournalCapacity bounds the journal (connections and requests each);
	// 0 means journal.DefaultCapacity.
	JournalCapacity int `json:"journalCapacity,omitempty"`
	// CertFile and KeyFile, if set, are the certificate every TLS serving
	// listener presents (https, h2) instead of one from the test CA, so a
	// real CDN that checks public certificates can reach the emulator.
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	// MaxRules bounds the rule table (0 means rules.DefaultMaxRules,
	// 10,000); adding rules beyond it is refused with an error naming it.
	MaxRules int `json:"maxRules,omitempty"`
	// Objects and Rules are loaded at start.
	Objects []objects.Spec `json:"objects,omitempty"`
	Rules   []rules.Rule   `json:"rules,omitempty"`
	// Logger receives the emulator's logs; nil means slog.Default().
	Logger *slog.Logger `json:"-"`
}

// ListenerConfig is one listener.
type ListenerConfig struct {
	Name    string  `json:"name"`
	Profile Profile `json:"profile"`
	// Addr is host:port to bind; default 127.0.0.1:0 (any free port).
	Addr string `json:"addr,omitempty"`
	// AllowFrom, if not empty, lists the CIDR prefixes (or single
	// addresses) that may connect; other peers are refused (TCP RST) and
	// journaled.
	AllowFrom []string `json:"allowFrom,omitempty"`
	// CertFile and KeyFile override Config's for this listener.
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	// Backend, if set, answers this listener's requests instead of the
	// object store: an S3-compatible or GCS-style bucket service, say.
	// Rules still fire around it (hold, delay, faults, header shaping), and
	// it can add notes to the journal with journal.Annotate.
	Backend http.Handler `json:"-"`
	// Proxy, if set, makes the backend a proxy to an upstream origin
	// (package proxy): rules, holds and the journal apply around it, and
	// each request's journal record has what the upstream answered.
	Proxy *proxy.Config `json:"proxy,omitempty"`
	// Shaping, if set, slows every connection down (bandwidth, latency,
	// slices, slow close, a byte cap); SetListenerShaping changes it.
	Shaping *rules.Shaping `json:"shaping,omitempty"`
}

// ListenerInfo describes a running listener (emuapi.ListenerInfo).
type ListenerInfo = emuapi.ListenerInfo

// Emulator is a running set of listeners sharing rules, objects, holds and a
// journal.
type Emulator struct {
	cfg     Config
	log     *slog.Logger
	ca      *testca.CA
	foreign *testca.CA // signs tls-untrusted certificates
	journal *journal.Journal
	rules   *rules.Table
	objects *objects.Store
	holds   *holds
	paths   *pathBudgets

	http1 *http1.Server
	h2    *h2.Server

	ctx       context.Context
	cancel    context.CancelFunc
	listeners []*listener
	byName    map[string]*listener
	connSeq   atomic.Uint64
	wg        sync.WaitGroup
	closeOnce sync.Once
}

type listener struct {
	ListenerInfo // Name, Profile, Addr and URL; fixed once bound
	cfg          ListenerConfig
	backend      http.Handler
	allow        []netip.Prefix
	st           listenerState // what it does now, and its sockets
}

// New checks cfg and prepares an emulator; Start binds its listeners.
func New(cfg Config) (*Emulator, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ca, err := testca.New("edgeconform originemu test CA")
	if err != nil {
		return nil, fmt.Errorf("creating the test CA: %w", err)
	}
	foreign, err := testca.New("edgeconform untrusted CA")
	if err != nil {
		return nil, fmt.Errorf("creating the untrusted CA: %w", err)
	}
	e := &Emulator{
		cfg: cfg, log: log, ca: ca, foreign: foreign,
		journal: journal.New(cfg.JournalCapacity),
		objects: objects.NewStore(),
		holds:   newHolds(),
		paths:   newPathBudgets(pathBudgetCap),
		byName:  map[string]*listener{},
	}
	e.rules = rules.NewTable(e.checkRule)
	if cfg.MaxRules < 0 {
		return nil, fmt.Errorf("emulator config: maxRules: must be >= 0 (0 = %d), got %d", rules.DefaultMaxRules, cfg.MaxRules)
	}
	e.rules.SetMax(cfg.MaxRules)
	if err := e.prepareListeners(); err != nil {
		return nil, err
	}
	if err := e.objects.Put(cfg.Objects...); err != nil {
		return nil, fmt.Errorf("config objects: %w", err)
	}
	if _, err := e.rules.Add(cfg.Rules...); err != nil {
		return nil, fmt.Errorf("config rules: %w", err)
	}
	e.http1 = &http1.Server{Handler: e, Logger: log}
	e.h2 = &h2.Server{Handler: e, Logger: log}
	return e, nil
}

// Start creates an emulator from cfg and starts it.
func Start(ctx context.Context, cfg Config) (*Emulator, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := e.Start(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Emulator) prepareListeners() error {
	var problems []string
	for i, lc := range e.cfg.Listeners {
		field := fmt.Sprintf("listeners[%d]", i)
		l := &listener{ListenerInfo: ListenerInfo{Name: lc.Name, Profile: lc.Profile, Addr: lc.Addr}, cfg: lc, backend: lc.Backend}
		l.st.tlsFor = map[Profile]*tls.Config{}
		l.st.conns = map[*liveConn]struct{}{}
		switch {
		case lc.Name == "":
			problems = append(problems, field+".name: required")
		case e.byName[lc.Name] != nil:
			problems = append(problems, fmt.Sprintf("%s.name: %q is used twice", field, lc.Name))
		}
		if lc.Proxy != nil {
			if lc.Backend != nil {
				problems = append(problems, field+".proxy: cannot be set together with a Backend")
			} else if err := lc.Proxy.Validate(field + ".proxy"); err != nil {
				problems = append(problems, err.Error())
			} else if p, err := proxy.New(*lc.Proxy, e.log); err != nil {
				problems = append(problems, fmt.Sprintf("%s.proxy: %v", field, err))
			} else {
				l.backend = p
			}
		}
		if lc.Shaping != nil {
			var errs fielderr.List
			lc.Shaping.Check(&errs, field+".shaping", false)
			if err := errs.Err(); err != nil {
				problems = append(problems, err.Error())
			}
			l.st.shaping = *lc.Shaping
		}
		if !lc.Profile.Valid() {
			problems = append(problems, field+".profile: "+errUnknownProfile(lc.Profile).Error())
		}
		if l.Addr == "" {
			l.Addr = "127.0.0.1:0"
		}
		for j, a := range lc.AllowFrom {
			p, err := parsePrefix(a)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s.allowFrom[%d]: %v", field, j, err))
			}
			l.allow = append(l.allow, p)
		}
		if lc.Profile.TLS() {
			cfg, err := e.tlsConfig(lc)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", field, err))
			}
			l.st.tlsFor[lc.Profile] = cfg
		}
		e.listeners = append(e.listeners, l)
		if lc.Name != "" {
			e.byName[lc.Name] = l
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("emulator config: %s", strings.Join(problems, "; "))
	}
	return nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, fmt.Errorf("%q is not a CIDR prefix: %w", s, err)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is neither an address nor a CIDR prefix", s)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// Start binds every listener and starts serving. Listeners stop when ctx
// ends or Close is called.
func (e *Emulator) Start(ctx context.Context) error {
	e.ctx, e.cancel = context.WithCancel(ctx)
	for _, l := range e.listeners {
		if err := e.bind(l); err != nil {
			e.Close()
			return fmt.Errorf("starting listener %s (%s): %w", l.Name, l.Profile, err)
		}
		e.log.Info("originemu listening", "listener", l.Name, "profile", l.Profile, "url", l.URL)
	}
	go func() {
		<-e.ctx.Done()
		e.closeListeners()
	}()
	return nil
}

// bind reserves the listener's port with its keeper socket and enters its
// initial state.
func (e *Emulator) bind(l *listener) error {
	l.st.done = e.ctx.Done()
	// The keeper shares its port (SO_REUSEPORT) with the listening sockets
	// of the states; first make sure nobody else serves on it, or a second
	// emulator given the same address would silently share it.
	probe, err := net.Listen("tcp", l.Addr)
	if err != nil {
		return err
	}
	probe.Close()
	keeper, err := bindSocket(l.Addr)
	if err != nil {
		return err
	}
	l.st.keeper = keeper
	l.Addr = keeper.addr.String()
	l.URL = fmt.Sprintf("%s://%s", l.Profile.Scheme(), l.Addr)
	l.st.mu.Lock()
	defer l.st.mu.Unlock()
	l.st.since = time.Now()
	return e.enter(l, l.Profile)
}

func (e *Emulator) closeListeners() {
	for _, l := range e.listeners {
		l.st.stop()
	}
}

// Close stops every listener, ends open connections and waits for their
// goroutines. Held requests are released.
func (e *Emulator) Close() error {
	e.closeOnce.Do(func() {
		if e.cancel != nil {
			e.cancel()
		}
		e.closeListeners()
		e.holds.releaseAll()
		e.wg.Wait()
		for _, l := range e.listeners {
			if p, ok := l.backend.(*proxy.Proxy); ok {
				p.Close()
			}
		}
	})
	return nil
}

// acceptLoop serves one listening socket of l until it is closed (by a
// state change or Close).
func (e *Emulator) acceptLoop(l *listener, ln net.Listener) {
	defer e.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && e.ctx.Err() == nil {
				e.log.Error("originemu accept failed", "listener", l.Name, "err", err)
			}
			return
		}
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.serveConn(l, c)
		}()
	}
}

// serveConn runs one connection from accept to close and journals it.
func (e *Emulator) serveConn(l *listener, c net.Conn) {
	info := &wire.ConnInfo{
		ID: e.connSeq.Add(1), Listener: l.Name,
		Peer: c.RemoteAddr(), Local: c.LocalAddr(), Opened: time.Now(),
	}
	if tc, ok := c.(*net.TCPConn); ok {
		lc := newLiveConn(tc, &l.st)
		l.st.track(lc)
		defer l.st.untrack(lc)
		c = lc
	}
	// End the connection when the emulator stops, whatever it is doing.
	stop := context.AfterFunc(e.ctx, func() { c.Close() })
	defer stop()
	reason := e.runConn(l, c, info)
	if e.ctx.Err() != nil {
		reason = "emulator stopped"
	}
	e.journal.CloseConn(info.ID, reason, time.Now())
}

// openConn journals a connection once what is known of it is known.
func (e *Emulator) openConn(info *wire.ConnInfo, state Profile) {
	e.journal.OpenConn(journal.Conn{
		ID: info.ID, Listener: info.Listener, State: string(state), Peer: addrString(info.Peer), Local: addrString(info.Local),
		SNI: info.SNI, OfferedALPN: info.OfferedALPN, ALPN: info.ALPN, TLSVersion: info.TLSVersion,
		Opened: info.Opened,
	})
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
