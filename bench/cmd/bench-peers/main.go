// Command bench-peers measures the reference edge cache side by side with
// nginx, the peer a user would pick instead (make bench-peers).
//
// It starts one origin (nginx serving static files), nginx as a caching
// proxy (proxy_cache, worker_processes 2 by default, an upstream keep-alive
// pool) and edgecache (GOMAXPROCS 2 alike), both in front of that origin
// on loopback, and drives both with wrk in alternating rounds (A B A B
// ...), so that a noisy, shared machine slows both alike and the ratio of
// medians stays meaningful. Rows:
// cache hits of 1 KiB, 64 KiB and 1 MiB, and uncached proxying (edgecache's
// BYPASS_CACHE route, nginx proxy_pass) of 1 KiB and 64 KiB; each with
// per-request logging on in both (nginx access_log buffered to a file,
// edgecache its default JSON log to a file) and off. Before a row is
// counted, every response must be a 200 of the full size: a check with a
// Go client first, then wrk's own counts (no non-2xx, no socket errors,
// bytes read per request at least the object's size). It also measures
// p50/p99 latency at a fixed request rate below saturation (an open-loop
// Go generator: latency from each request's scheduled time) and each
// server's peak RSS (VmHWM, nginx's master and workers summed), and the
// CPU time each spent per request during its rounds (user and system, from
// /proc/PID/stat, nginx's workers summed): on a shared machine req/s moves
// with the neighbours, CPU per request much less, and the split says
// whether the kernel's side (sockets) or the process's own code is where
// the two differ. It also records wrk's own CPU per request and its
// share of a core in each round (from wrk's rusage): wrk runs one thread
// (-t1), and a row where that thread is busy 90% of a core or more
// against both servers is wrk-bound: req/s is then 1 ÷ what a response
// costs wrk to read, and the ratio says little of the servers (the
// summary names such rows). And it samples the whole machine's CPU
// around each round (machine.go, /proc/stat): the busy time per request
// of every process and the kernel, and the share of the round nobody ran.
// On the 2-vCPU machine the rows are CPU-bound, so req/s follows both,
// and a server can lose a row with a cheaper request by leaving the
// machine idle longer.
//
// A third implementation, the ceiling (ceiling.go), is a bare Go net/http
// server on the same bytes (hits from memory, /pass/ through one
// http.Transport), measured in the same alternation: what Go's HTTP stack
// alone reaches against nginx here. It is informational, not counted in
// the goal. -pprof DIR writes a CPU profile of edgecache and of the
// ceiling for each row (their first round, /debug/pprof/profile).
// -epoll-probe adds a fourth on the /pass/ rows (epollprobe_linux.go): a
// minimal Go proxy on raw epoll with no per-request work, what an event
// loop would buy, also informational; -goroutine-probe a fifth
// (goprobe.go) on every row: the same proxy on goroutines and net.Conn,
// caching /hit/ responses whole in memory, what Go's
// goroutine-per-connection model alone reaches, without net/http.
//
// -runs N repeats the whole measurement (every row, logging on and off)
// N times and ends with one table: per row, the median of the runs'
// edgecache ÷ nginx ratios with their min–max, and whether it meets issue
// #14's goal (1.0× with logging on, 0.9× off); one run's ratio moves by
// up to ±10% on a shared machine, so the goal is judged on several.
//
// -workers N gives both proxies N cores' worth of workers: nginx's
// worker_processes and edgecache's GOMAXPROCS (and the ceiling's and the
// probes'). The default, 2, is the setting on the 2-core machine;
// -workers 1 leaves a core to wrk and the origin on such a machine.
//
//	go run ./bench/cmd/bench-peers [-runs 1] [-rounds 3] [-duration 5s] [-connections 64] [-workers 2] [-rows hit-1k,...] [-pprof DIR] [-ceiling=false] [-epoll-probe] [-goroutine-probe]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type row struct {
	name string
	path string // same path on both proxies and the origin
	size int
	rate int // requests per second for the fixed-rate latency run
}

var allRows = []row{
	{"hit-1k", "/hit/1k.bin", 1 << 10, 2000},
	{"hit-64k", "/hit/64k.bin", 64 << 10, 1000},
	{"hit-1m", "/hit/1m.bin", 1 << 20, 200},
	{"proxy-1k", "/pass/1k.bin", 1 << 10, 1000},
	{"proxy-64k", "/pass/64k.bin", 64 << 10, 500},
}

type settings struct {
	rounds      int
	runs        int // whole runs, summarized at the end
	duration    time.Duration
	connections int
	workers     int // nginx worker_processes and GOMAXPROCS of the Go servers
	latencyFor  time.Duration
	rows        []row
	keep        bool
	pprofDir    string // a CPU profile of edgecache per row, when set
	ceiling     bool   // measure the bare Go net/http ceiling too
	epollProbe  bool   // measure the raw-epoll probe on /pass/ rows too
	goProbe     bool   // measure the goroutine probe on every row too
}

func main() {
	if len(os.Args) > 1 {
		child := map[string]func(context.Context, []string) error{"-" + ceilingFlag: ceilingMain, "-" + epollProbeFlag: epollProbeMain,
			"-" + goProbeFlag: goProbeMain}
		if serve, ok := child[os.Args[1]]; ok {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := serve(ctx, os.Args[2:]); err != nil {
				fmt.Fprintln(os.Stderr, "bench-peers:", err)
				os.Exit(1)
			}
			return
		}
	}
	var s settings
	flag.IntVar(&s.rounds, "rounds", 3, "alternating rounds per row and implementation")
	flag.IntVar(&s.runs, "runs", 1, "whole runs (every row, logging on and off), then the median of their ratios per row against issue #14's goal")
	flag.DurationVar(&s.duration, "duration", 5*time.Second, "length of one wrk round")
	flag.IntVar(&s.connections, "connections", 64, "keep-alive connections (wrk -c)")
	flag.IntVar(&s.workers, "workers", 2, "nginx worker_processes and GOMAXPROCS of edgecache (and the ceiling and probes)")
	flag.DurationVar(&s.latencyFor, "latency-duration", 5*time.Second, "length of the fixed-rate latency run per row (0: skip)")
	rowsFlag := flag.String("rows", "", "comma-separated rows to run (default all: "+rowNames(allRows)+")")
	flag.BoolVar(&s.keep, "keep", false, "keep the temporary directory (configs, logs)")
	flag.StringVar(&s.pprofDir, "pprof", "", "write CPU profiles of edgecache and the ceiling per row (their first round) to `DIR`")
	flag.BoolVar(&s.ceiling, "ceiling", true, "also measure a bare Go net/http server on the same bytes (informational)")
	flag.BoolVar(&s.epollProbe, "epoll-probe", false, "also measure a minimal Go proxy on raw epoll on the /pass/ rows (informational, Linux)")
	flag.BoolVar(&s.goProbe, "goroutine-probe", false, "also measure the same minimal proxy on goroutines and net.Conn, caching /hit/ responses in memory, on every row (informational)")
	flag.Parse()
	if s.runs < 1 {
		fmt.Fprintf(os.Stderr, "bench-peers: -runs %d: want at least 1\n", s.runs)
		os.Exit(2)
	}
	if s.rounds < 1 {
		fmt.Fprintf(os.Stderr, "bench-peers: -rounds %d: want at least 1\n", s.rounds)
		os.Exit(2)
	}
	if s.workers < 1 {
		fmt.Fprintf(os.Stderr, "bench-peers: -workers %d: want at least 1\n", s.workers)
		os.Exit(2)
	}
	if s.epollProbe && !epollProbeSupported {
		fmt.Fprintln(os.Stderr, "bench-peers: -epoll-probe: the epoll probe runs on Linux only")
		os.Exit(2)
	}
	s.rows = allRows
	if *rowsFlag != "" {
		s.rows = nil
		for _, n := range strings.Split(*rowsFlag, ",") {
			i := slices.IndexFunc(allRows, func(r row) bool { return r.name == n })
			if i < 0 {
				fmt.Fprintf(os.Stderr, "bench-peers: unknown row %q (rows: %s)\n", n, rowNames(allRows))
				os.Exit(2)
			}
			s.rows = append(s.rows, allRows[i])
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, s); err != nil {
		fmt.Fprintln(os.Stderr, "bench-peers:", err)
		os.Exit(1)
	}
}

func rowNames(rs []row) string {
	var n []string
	for _, r := range rs {
		n = append(n, r.name)
	}
	return strings.Join(n, ",")
}

func run(ctx context.Context, s settings) error {
	nginx, err := need("nginx", "nginx")
	if err != nil {
		return err
	}
	wrk, err := need("wrk", "wrk")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-peers-")
	if err != nil {
		return err
	}
	if s.keep {
		fmt.Println("keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	edgecache := filepath.Join(dir, "edgecache")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", edgecache, "./reference/cmd/edgecache").CombinedOutput(); err != nil {
		return fmt.Errorf("building edgecache (run from the repository's root): %v\n%s", err, out)
	}
	for _, sub := range []string{"hit", "pass"} {
		if err := os.MkdirAll(filepath.Join(dir, "docroot", sub), 0o755); err != nil {
			return err
		}
		for _, r := range allRows {
			if err := os.WriteFile(filepath.Join(dir, "docroot", sub, filepath.Base(r.path)), pattern(r.size), 0o644); err != nil {
				return err
			}
		}
	}
	if s.pprofDir != "" {
		if err := os.MkdirAll(s.pprofDir, 0o755); err != nil {
			return fmt.Errorf("-pprof: %w", err)
		}
	}
	ports, err := freePorts(7) // origin, nginx proxy, edgecache, ceiling, edgecache admin, epoll probe, goroutine probe
	if err != nil {
		return err
	}
	origin := &proc{name: "origin nginx"}
	if err := origin.startNginx(ctx, nginx, dir, "origin", originConf(dir, ports[0])); err != nil {
		return err
	}
	defer origin.stop()
	if err := waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/hit/1k.bin", ports[0])); err != nil {
		return fmt.Errorf("origin: %w\n%s", err, origin.tail())
	}
	order := "nginx / edgecache"
	if s.ceiling {
		order += " / Go ceiling"
	}
	if s.epollProbe {
		order += " / epoll probe (/pass/ rows)"
	}
	if s.goProbe {
		order += " / goroutine probe"
	}
	fmt.Printf("bench-peers: %d round(s) of %v per row and implementation, wrk -t1 -c%d, nginx worker_processes %d and GOMAXPROCS=%[4]d, alternating %s\n",
		s.rounds, s.duration, s.connections, s.workers, order)
	var all []ratios
	for i := range s.runs {
		if s.runs > 1 {
			fmt.Printf("\nrun %d of %d\n", i+1, s.runs)
		}
		var tables []string
		one := ratios{on: map[string]float64{}, off: map[string]float64{}, boundOn: map[string]bool{}, boundOff: map[string]bool{}}
		for _, logging := range []bool{true, false} {
			m, bound := one.off, one.boundOff
			if logging {
				m, bound = one.on, one.boundOn
			}
			t, err := measure(ctx, s, dir, nginx, wrk, edgecache, ports, logging, m, bound)
			if err != nil {
				return err
			}
			tables = append(tables, t)
		}
		all = append(all, one)
		fmt.Println()
		fmt.Println(strings.Join(tables, "\n"))
	}
	fmt.Println(summarize(s.rows, all))
	return nil
}

// impl is one implementation under test.
type impl struct {
	name string
	base string
	p    *proc
}

// measure runs every row with logging on or off in both proxies (the
// ceiling never logs) and puts each row's edgecache ÷ nginx ratio in
// ratio, and in bound whether wrk was the bottleneck against both.
func measure(ctx context.Context, s settings, dir, nginx, wrk, edgecache string, ports []int, logging bool, ratio map[string]float64, bound map[string]bool) (string, error) {
	mode := "off"
	if logging {
		mode = "on"
	}
	proxy := &proc{name: "nginx proxy"}
	if err := proxy.startNginx(ctx, nginx, dir, "proxy-log-"+mode, proxyConf(dir, ports[1], ports[0], s.workers, logging)); err != nil {
		return "", err
	}
	defer proxy.stop()
	edge, err := startEdge(ctx, s, dir, edgecache, ports, logging)
	if err != nil {
		return "", err
	}
	defer edge.stop()
	impls := []impl{
		{"nginx", fmt.Sprintf("http://127.0.0.1:%d", ports[1]), proxy},
		{"edgecache", fmt.Sprintf("http://127.0.0.1:%d", ports[2]), edge},
	}
	if s.ceiling {
		c, err := startCeiling(ctx, s, dir, ports)
		if err != nil {
			return "", err
		}
		defer c.stop()
		impls = append(impls, impl{"ceiling", fmt.Sprintf("http://127.0.0.1:%d", ports[3]), c})
	}
	if s.epollProbe {
		pr, err := startEpollProbe(ctx, s, dir, ports)
		if err != nil {
			return "", err
		}
		defer pr.stop()
		impls = append(impls, impl{probeName, fmt.Sprintf("http://127.0.0.1:%d", ports[5]), pr})
	}
	if s.goProbe {
		pr, err := startProbe(ctx, s, dir, goProbeName, goProbeFlag, ports[6], ports[0])
		if err != nil {
			return "", err
		}
		defer pr.stop()
		impls = append(impls, impl{goProbeName, fmt.Sprintf("http://127.0.0.1:%d", ports[6]), pr})
	}
	for _, im := range impls {
		if err := waitHTTP(ctx, im.base+"/hit/1k.bin"); err != nil {
			return "", fmt.Errorf("%s: %w\n%s", im.name, err, im.p.tail())
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### logging %s\n\n", mode)
	fmt.Fprintf(&b, "| row | nginx req/s (median, min–max) | edgecache req/s (median, min–max) | ratio | nginx CPU µs/req (user + sys) | edgecache CPU µs/req (user + sys) | wrk against nginx: CPU µs/req, share of a core | wrk against edgecache: CPU µs/req, share of a core | machine with nginx: busy µs/req, idle | machine with edgecache: busy µs/req, idle | nginx p50/p99 | edgecache p50/p99 | at rate |")
	cols := 13
	if s.ceiling {
		fmt.Fprintf(&b, " Go ceiling req/s (median, min–max) | ceiling ÷ nginx | edgecache ÷ ceiling |")
		cols += 3
	}
	if s.epollProbe {
		fmt.Fprintf(&b, " epoll probe req/s (median, min–max) | probe ÷ nginx |")
		cols += 2
	}
	if s.goProbe {
		fmt.Fprintf(&b, " goroutine probe req/s (median, min–max) | goroutine probe ÷ nginx | edgecache ÷ goroutine probe | goroutine probe CPU µs/req (user + sys) |")
		cols += 4
	}
	fmt.Fprintf(&b, "\n|%s\n", strings.Repeat("---|", cols))
	for _, r := range s.rows {
		line, x, err := measureRow(ctx, s, wrk, impls, r, mode, ports[4])
		if err != nil {
			return "", err
		}
		ratio[r.name], bound[r.name] = x.ratio, x.clientBound
		b.WriteString(line)
	}
	fmt.Fprintf(&b, "\npeak RSS (VmHWM): nginx proxy (master + workers) %s, edgecache %s\n", fmtBytes(proxy.peakRSS()), fmtBytes(edge.peakRSS()))
	return b.String(), nil
}

// startEdge starts edgecache on ports[2] with its admin listener (pprof)
// on ports[4].
func startEdge(ctx context.Context, s settings, dir, edgecache string, ports []int, logging bool) (*proc, error) {
	edge := &proc{name: "edgecache", env: goEnv(s)}
	cfg := filepath.Join(dir, "edgecache.yaml")
	if err := os.WriteFile(cfg, []byte(edgeConf(ports[0])), 0o644); err != nil {
		return nil, err
	}
	args := []string{"serve", "--config", cfg, "--listen", fmt.Sprintf("127.0.0.1:%d", ports[2]), "--cache-size", "512MiB",
		"--admin", fmt.Sprintf("127.0.0.1:%d", ports[4])}
	logFile := os.DevNull
	if logging {
		logFile = filepath.Join(dir, "edgecache-log-on.log")
	} else {
		args = append(args, "--log-level", "warn")
	}
	if err := edge.start(ctx, logFile, edgecache, args...); err != nil {
		return nil, err
	}
	return edge, nil
}

// The probes' names in the tables.
const (
	probeName   = "epoll probe"
	goProbeName = "goroutine probe"
)

// isProbe: the probes are not profiled.
func isProbe(name string) bool { return name == probeName || name == goProbeName }

// startEpollProbe runs this program as the epoll probe (epollprobe_linux.go)
// on ports[5], in front of the origin on ports[0].
func startEpollProbe(ctx context.Context, s settings, dir string, ports []int) (*proc, error) {
	return startProbe(ctx, s, dir, probeName, epollProbeFlag, ports[5], ports[0])
}

// startProbe runs this program as the probe name (its hidden flag) on
// port, in front of the origin on originPort.
func startProbe(ctx context.Context, s settings, dir, name, flag string, port, originPort int) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program for the %s: %w", name, err)
	}
	p := &proc{name: name, env: goEnv(s)}
	err = p.start(ctx, filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".out"), self, "-"+flag,
		fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", originPort))
	return p, err
}

// startCeiling runs this program as the bare Go server on ports[3].
func startCeiling(ctx context.Context, s settings, dir string, ports []int) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program for the ceiling: %w", err)
	}
	c := &proc{name: "Go ceiling", env: goEnv(s)}
	err = c.start(ctx, filepath.Join(dir, "ceiling.out"), self, "-"+ceilingFlag,
		fmt.Sprintf("127.0.0.1:%d", ports[3]), filepath.Join(dir, "docroot"), fmt.Sprintf("http://127.0.0.1:%d", ports[0]))
	return c, err
}

// measureRow runs one row's alternating rounds and latency runs and
// returns its table line.
func measureRow(ctx context.Context, s settings, wrk string, impls []impl, r row, mode string, adminPort int) (string, rowResult, error) {
	if !strings.HasPrefix(r.path, "/pass/") { // the epoll probe only proxies
		impls = slices.DeleteFunc(slices.Clone(impls), func(im impl) bool { return im.name == probeName })
	}
	for _, im := range impls { // fill the caches; every response must be complete
		if err := checkFull(ctx, im.base+r.path, r.size, 3); err != nil {
			return "", rowResult{}, fmt.Errorf("%s %s: %w", im.name, r.name, err)
		}
	}
	rps := map[string][]float64{}
	cpu := map[string][][2]float64{}     // µs of user and system CPU per request, per round
	client := map[string][][2]float64{}  // wrk's µs of CPU per request and share of a core, per round
	machine := map[string][][2]float64{} // the whole machine's busy µs per request and idle share, per round
	for round := range s.rounds {
		for _, im := range impls {
			var prof func() error
			if s.pprofDir != "" && round == 0 && im.name != "nginx" && !isProbe(im.name) {
				url := fmt.Sprintf("http://127.0.0.1:%d", adminPort) // edgecache's admin listener
				if im.name == "ceiling" {
					url = im.base
				}
				prof = cpuProfile(ctx, url, s.duration, filepath.Join(s.pprofDir, fmt.Sprintf("%s-%s-log-%s.pprof", im.name, r.name, mode)))
			}
			var u0, s0, u1, s1 time.Duration
			var m0, m1 machineCPU
			var merr, merr1 error
			var res *wrkResult
			for again := 0; ; again++ {
				u0, s0 = im.p.cpuTime()
				m0, merr = readMachineCPU()
				var err error
				res, err = runWrk(ctx, wrk, im.base+r.path, s)
				m1, merr1 = readMachineCPU()
				u1, s1 = im.p.cpuTime()
				if prof != nil {
					if perr := prof(); perr != nil {
						fmt.Fprintf(os.Stderr, "bench-peers: profiling %s: %v\n", r.name, perr)
					}
					prof = nil
				}
				if err != nil {
					return "", rowResult{}, fmt.Errorf("%s %s round %d: %w", im.name, r.name, round+1, err)
				}
				err = res.complete(r.size)
				if err == nil {
					break
				}
				if !res.onlyTimedOut(r.size) || again == stallRetries {
					return "", rowResult{}, fmt.Errorf("%s %s round %d: not counted: %w", im.name, r.name, round+1, err)
				}
				// A stall (wrk's 2 s timeout, every response otherwise
				// complete): the round is not counted and is run again,
				// in the open.
				fmt.Printf("  logging %-3s %-9s %-9s round %d: not counted (%v): a stall, running the round again\n",
					mode, r.name, im.name, round+1, err)
			}
			rps[im.name] = append(rps[im.name], res.rps)
			us := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(res.requests) }
			cpu[im.name] = append(cpu[im.name], [2]float64{us(u1 - u0), us(s1 - s0)})
			client[im.name] = append(client[im.name], [2]float64{us(res.cpu), res.busy()})
			var machineNote string
			if merr == nil {
				merr = merr1
			}
			var per, idle float64
			if merr == nil {
				per, idle, merr = m1.since(m0, res.requests)
			}
			if merr == nil {
				machine[im.name] = append(machine[im.name], [2]float64{per, idle})
				machineNote = fmt.Sprintf("; machine %.1f µs busy per request, %.1f%% idle", per, 100*idle)
			} else {
				machineNote = fmt.Sprintf("; machine not measured: %v", merr)
			}
			fmt.Printf("  logging %-3s %-9s %-9s round %d: %9.0f req/s, CPU %.1f µs user + %.1f µs system per request; wrk %.1f µs per request, %.0f%% of a core%s\n",
				mode, r.name, im.name, round+1, res.rps, us(u1-u0), us(s1-s0), us(res.cpu), 100*res.busy(), machineNote)
		}
	}
	lat := map[string]string{}
	for _, im := range impls[:2] {
		if s.latencyFor <= 0 {
			lat[im.name] = "—"
			continue
		}
		p50, p99, err := fixedRate(ctx, im.base+r.path, r.size, r.rate, s.latencyFor, s.connections)
		if err != nil {
			return "", rowResult{}, fmt.Errorf("%s %s fixed rate: %w", im.name, r.name, err)
		}
		lat[im.name] = fmt.Sprintf("%s / %s", fmtDur(p50), fmtDur(p99))
	}
	n, e := median(rps["nginx"]), median(rps["edgecache"])
	nw, ew := clientPer(client["nginx"]), clientPer(client["edgecache"])
	line := fmt.Sprintf("| %s | %s | %s | **%.2f×** | %s | %s | %s | %s | %s | %s | %s | %s | %d/s |", r.name, spread(rps["nginx"]), spread(rps["edgecache"]),
		e/n, cpuPer(cpu["nginx"]), cpuPer(cpu["edgecache"]), nw, ew, machinePer(machine["nginx"]), machinePer(machine["edgecache"]),
		lat["nginx"], lat["edgecache"], r.rate)
	if c, ok := rps["ceiling"]; ok {
		line += fmt.Sprintf(" %s | %.2f× | %.2f× |", spread(c), median(c)/n, e/median(c))
	}
	if s.epollProbe {
		if pr, ok := rps[probeName]; ok {
			line += fmt.Sprintf(" %s | %.2f× |", spread(pr), median(pr)/n)
		} else {
			line += " — | — |"
		}
	}
	if s.goProbe {
		if pr, ok := rps[goProbeName]; ok {
			line += fmt.Sprintf(" %s | %.2f× | %.2f× | %s |", spread(pr), median(pr)/n, e/median(pr), cpuPer(cpu[goProbeName]))
		} else {
			line += " — | — | — | — |"
		}
	}
	return line + "\n", rowResult{ratio: e / n, clientBound: clientBound(client["nginx"]) && clientBound(client["edgecache"])}, nil
}

// rowResult is one row's outcome in one run: edgecache ÷ nginx, and
// whether wrk was the bottleneck against both (clientBound).
type rowResult struct {
	ratio       float64
	clientBound bool
}

// clientPer is wrk's median CPU per request, in µs, and its median share
// of a core over rounds.
func clientPer(rounds [][2]float64) string { return perRound(rounds, "%.1f, %.0f%%") }

// machinePer is the machine's median busy µs per request and median idle
// share over rounds ("—" where /proc/stat could not be read).
func machinePer(rounds [][2]float64) string { return perRound(rounds, "%.1f, %.1f%%") }

// perRound formats the median of each round's first value and 100 times
// the median of its second (a share) with format; "—" without rounds.
func perRound(rounds [][2]float64, format string) string {
	var v, share []float64
	for _, r := range rounds {
		v, share = append(v, r[0]), append(share, r[1])
	}
	if len(v) == 0 {
		return "—"
	}
	return fmt.Sprintf(format, median(v), 100*median(share))
}

// clientBound reports whether wrk's one thread was busy at least
// clientBoundAt of a core in the median round.
func clientBound(rounds [][2]float64) bool {
	var b []float64
	for _, r := range rounds {
		b = append(b, r[1])
	}
	return len(b) > 0 && median(b) >= clientBoundAt
}

// cpuPer is the median user + system CPU per request, in µs, of rounds.
func cpuPer(rounds [][2]float64) string {
	var u, sy []float64
	for _, r := range rounds {
		u, sy = append(u, r[0]), append(sy, r[1])
	}
	return fmt.Sprintf("%.1f + %.1f", median(u), median(sy))
}

// spread is "median (min–max)".
func spread(v []float64) string {
	return fmt.Sprintf("%.0f (%.0f–%.0f)", median(v), slices.Min(v), slices.Max(v))
}

// cpuProfile starts a CPU profile of edgecache (through its admin
// listener) or the ceiling (base) lasting about d, written to file; the returned func waits for it.
func cpuProfile(ctx context.Context, base string, d time.Duration, file string) func() error {
	done := make(chan error, 1)
	go func() {
		secs := max(1, int(d.Seconds())-1)
		url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, secs)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			done <- fmt.Errorf("%s: %s", url, resp.Status)
			return
		}
		b, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(file, b, 0o644)
		}
		done <- err
	}()
	return func() error { return <-done }
}

func fmtDur(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func fmtBytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// need finds bin, installing pkg from Debian when root.
func need(bin, pkg string) (string, error) {
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin"} {
		if p := filepath.Join(d, bin); fileExists(p) {
			return p, nil
		}
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%s not found: install it with `sudo apt-get install %s`", bin, pkg)
	}
	fmt.Printf("bench-peers: installing %s from Debian\n", pkg)
	cmd := exec.Command("apt-get", "install", "-y", "-q", "--no-install-recommends", pkg)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get install %s: %v\n%s", pkg, err, out)
	}
	return exec.LookPath(bin)
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// pattern is n bytes whose content depends on the offset.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + (i/7)%26)
	}
	return b
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func originConf(dir string, port int) string {
	return fmt.Sprintf(userLine()+`daemon off;
master_process on;
worker_processes 1;
pid %[1]s/origin.pid;
error_log %[1]s/origin-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  default_type application/octet-stream;
  client_body_temp_path %[1]s/tmp-origin;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:%[2]d;
    root %[1]s/docroot;
  }
}
`, dir, port)
}

func proxyConf(dir string, port, origin, workers int, logging bool) string {
	log := "access_log off;"
	if logging {
		log = fmt.Sprintf("access_log %s/nginx-access.log combined buffer=64k flush=1s;", dir)
	}
	return fmt.Sprintf(userLine()+`daemon off;
master_process on;
worker_processes %[5]d;
pid %[1]s/proxy.pid;
error_log %[1]s/proxy-error.log warn;
events { worker_connections 4096; }
http {
  %[4]s
  client_body_temp_path %[1]s/tmp-proxy-body;
  proxy_temp_path %[1]s/tmp-proxy;
  proxy_cache_path %[1]s/cache levels=1:2 keys_zone=c:16m max_size=512m inactive=1h use_temp_path=off;
  keepalive_requests 1000000;
  upstream origin {
    server 127.0.0.1:%[3]d;
    keepalive 64;
  }
  server {
    listen 127.0.0.1:%[2]d;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    location /hit/ {
      proxy_cache c;
      proxy_cache_valid 200 1h;
      proxy_pass http://origin;
    }
    location /pass/ {
      proxy_pass http://origin;
    }
  }
}
`, dir, port, origin, log, workers)
}

// userLine keeps nginx's workers as the user running the benchmark (as
// root, nginx would switch them to nobody, who cannot read the temporary
// directory).
func userLine() string {
	if os.Geteuid() == 0 {
		return "user root;\n"
	}
	return ""
}

func edgeConf(origin int) string {
	return fmt.Sprintf(`origins:
  - {name: origin, originAddress: 127.0.0.1, protocol: HTTP, port: %d}
service:
  name: bench
  routing:
    hostRules: [{hosts: ["*"], pathMatcher: m}]
    pathMatchers:
      - name: m
        routeRules:
          - priority: 1
            matchRules: [{prefixMatch: /hit/}]
            origin: origin
            routeAction: {cdnPolicy: {cacheMode: FORCE_CACHE_ALL, defaultTtl: 3600s}}
          - priority: 2
            matchRules: [{prefixMatch: /pass/}]
            origin: origin
            routeAction: {cdnPolicy: {cacheMode: BYPASS_CACHE}}
`, origin)
}

// goEnv is the environment of the Go servers: -workers Ps, as nginx has
// -workers worker processes.
func goEnv(s settings) []string {
	return []string{fmt.Sprintf("GOMAXPROCS=%d", s.workers)}
}

// proc is a server started in the foreground.
type proc struct {
	name string
	env  []string // added to this program's environment
	cmd  *exec.Cmd
	log  string
	mu   sync.Mutex
	peak int64 // VmHWM seen at stop
}

func (p *proc) startNginx(ctx context.Context, bin, dir, name, conf string) error {
	path := filepath.Join(dir, name+".conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return err
	}
	return p.start(ctx, filepath.Join(dir, name+".out"), bin, "-p", dir, "-e", filepath.Join(dir, name+"-error.log"), "-c", path)
}

func (p *proc) start(ctx context.Context, logFile, bin string, args ...string) error {
	out, err := os.Create(logFile)
	if err != nil {
		return err
	}
	p.log = logFile
	p.cmd = exec.CommandContext(ctx, bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, out
	if len(p.env) > 0 {
		p.cmd.Env = append(os.Environ(), p.env...)
	}
	if logFile == os.DevNull {
		p.cmd.Stderr = io.Discard
		out.Close()
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", p.name, err)
	}
	return nil
}

// peakRSS sums VmHWM over the process and its children.
func (p *proc) peakRSS() int64 {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	pids := append([]int{p.cmd.Process.Pid}, children(p.cmd.Process.Pid)...)
	var sum int64
	for _, pid := range pids {
		sum += vmHWM(pid)
	}
	return sum
}

// cpuTime is the user and system CPU time the process and its children
// (nginx's workers) have used so far, from /proc/PID/stat.
func (p *proc) cpuTime() (user, sys time.Duration) {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0, 0
	}
	for _, pid := range append([]int{p.cmd.Process.Pid}, children(p.cmd.Process.Pid)...) {
		u, s := procCPU(pid)
		user, sys = user+u, sys+s
	}
	return user, sys
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on Linux.
const clockTick = 10 * time.Millisecond

func procCPU(pid int) (user, sys time.Duration) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(s[i+1:]) // from field 3 (state): utime is 14, stime 15
	if len(f) < 13 {
		return 0, 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u) * clockTick, time.Duration(st) * clockTick
}

func children(ppid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces; cut after the last ')'.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			f := strings.Fields(s[i+1:])
			if len(f) > 1 && f[1] == strconv.Itoa(ppid) {
				out = append(out, pid)
			}
		}
	}
	return out
}

func vmHWM(pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func (p *proc) stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func waitHTTP(ctx context.Context, url string) error {
	deadline := time.Now().Add(20 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("not serving %s after 20s: %v", url, last)
}

// checkFull asks for url n times and wants a 200 with exactly size bytes.
func checkFull(ctx context.Context, url string, size, n int) error {
	for i := range n {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("request %d: reading the body: %w", i+1, err)
		}
		if resp.StatusCode != http.StatusOK || len(got) != size {
			return fmt.Errorf("request %d: %d with %d bytes, want 200 with %d", i+1, resp.StatusCode, len(got), size)
		}
	}
	return nil
}

type wrkResult struct {
	requests int64
	bytes    float64
	rps      float64
	non2xx   int64
	sockErr  string
	// cpu is wrk's own user + system time, wall how long it ran: with
	// -t1, cpu/wall near 1 is wrk's one thread busy all the round.
	cpu, wall time.Duration
}

// clientBoundAt is the share of a core at which wrk's one thread (-t1)
// is the bottleneck: req/s is then 1 ÷ wrk's CPU per response, and the
// row measures what a response costs wrk to read, not the server.
const clientBoundAt = 0.9

// busy is the share of one core wrk used during the round.
func (r *wrkResult) busy() float64 {
	if r.wall <= 0 {
		return 0
	}
	return float64(r.cpu) / float64(r.wall)
}

var (
	reTotal  = regexp.MustCompile(`(\d+) requests in [\d.]+\w+, ([\d.]+)([KMGT]?B) read`)
	reRPS    = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	reNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	reSock   = regexp.MustCompile(`Socket errors: (.*)`)
)

func runWrk(ctx context.Context, wrk, url string, s settings) (*wrkResult, error) {
	cmd := exec.CommandContext(ctx, wrk, "-t1", fmt.Sprintf("-c%d", s.connections),
		fmt.Sprintf("-d%ds", int(s.duration.Seconds())), url)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	r, err := parseWrk(string(out))
	if err != nil {
		return nil, err
	}
	r.cpu, r.wall = cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime(), wall
	return r, nil
}

func parseWrk(out string) (*wrkResult, error) {
	r := &wrkResult{}
	m := reTotal.FindStringSubmatch(out)
	rm := reRPS.FindStringSubmatch(out)
	if m == nil || rm == nil {
		return nil, fmt.Errorf("cannot read wrk's output:\n%s", out)
	}
	r.requests, _ = strconv.ParseInt(m[1], 10, 64)
	r.bytes, _ = strconv.ParseFloat(m[2], 64)
	r.bytes *= map[string]float64{"B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}[m[3]]
	r.rps, _ = strconv.ParseFloat(rm[1], 64)
	if n := reNon2xx.FindStringSubmatch(out); n != nil {
		r.non2xx, _ = strconv.ParseInt(n[1], 10, 64)
	}
	if se := reSock.FindStringSubmatch(out); se != nil {
		r.sockErr = se[1]
	}
	return r, nil
}

// complete refuses a round with errors: wrk counts them as requests.
func (r *wrkResult) complete(size int) error {
	switch {
	case r.requests == 0:
		return errors.New("no request completed")
	case r.non2xx > 0:
		return fmt.Errorf("%d of %d responses were not 2xx/3xx", r.non2xx, r.requests)
	case r.sockErr != "" && !onlyTimeoutsZero(r.sockErr):
		return fmt.Errorf("socket errors: %s", r.sockErr)
	}
	// wrk rounds the byte count to 2 decimals of its unit: allow 1%.
	if per := r.bytes / float64(r.requests); per < 0.99*float64(size) {
		return fmt.Errorf("%.0f bytes read per request, less than the object's %d: short bodies", per, size)
	}
	return nil
}

// stallRetries is how many times a round whose only fault was wrk's
// timeouts is run again before the measurement gives up.
const stallRetries = 2

// onlyTimedOut reports whether r's only fault was requests that timed
// out (a stall of the machine or the server): every response that came
// was a complete 2xx/3xx, with no other socket error.
func (r *wrkResult) onlyTimedOut(size int) bool {
	var connect, read, write, timeout int
	if _, err := fmt.Sscanf(strings.TrimSpace(r.sockErr), "connect %d, read %d, write %d, timeout %d", &connect, &read, &write, &timeout); err != nil {
		return false
	}
	if connect+read+write > 0 || timeout == 0 {
		return false
	}
	rest := *r // the round less its timeouts: complete's other checks
	rest.sockErr = ""
	return rest.complete(size) == nil
}

func onlyTimeoutsZero(s string) bool {
	return strings.TrimSpace(s) == "connect 0, read 0, write 0, timeout 0"
}

// fixedRate sends rate requests per second for d (open loop, up to conns
// in flight) and returns p50 and p99 latency from each request's scheduled
// start; a response that is not a complete 200 is an error.
func fixedRate(ctx context.Context, url string, size, rate int, d time.Duration, conns int) (time.Duration, time.Duration, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	n := int(d.Seconds() * float64(rate))
	interval := time.Second / time.Duration(rate)
	lat := make([]time.Duration, n)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if w := time.Until(at); w > 0 {
			select {
			case <-ctx.Done():
				return 0, 0, ctx.Err()
			case <-time.After(w):
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Get(url)
			if err == nil {
				var m int64
				m, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err == nil && (resp.StatusCode != http.StatusOK || m != int64(size)) {
					err = fmt.Errorf("%d with %d bytes", resp.StatusCode, m)
				}
			}
			lat[i] = time.Since(at)
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, 0, err
	default:
	}
	slices.Sort(lat)
	return lat[len(lat)/2], lat[len(lat)*99/100], nil
}
