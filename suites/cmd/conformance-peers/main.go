// Command conformance-peers runs the conformance suites against the
// reference and real third-party edge caches (suites/peers), each
// started in the foreground on loopback against one shared emulator set,
// compares every peer's results with its checked-in expectations
// (suites/peers/expectations/<peer>.json), and writes one report:
//
//	go run ./suites/cmd/conformance-peers [-peers nginx,varnish] [-profile strict] [-out DIR]
//
// (make conformance-peers [PEERS=nginx,...]). It exits 1 when a peer could
// not run or a result differs from its expectation.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/edgeconform/edgeconform/suites/peers"
	"github.com/edgeconform/edgeconform/suites/peers/caddy"
	"github.com/edgeconform/edgeconform/suites/peers/haproxy"
	"github.com/edgeconform/edgeconform/suites/peers/httpd"
	"github.com/edgeconform/edgeconform/suites/peers/nginx"
	"github.com/edgeconform/edgeconform/suites/peers/squid"
	"github.com/edgeconform/edgeconform/suites/peers/trafficserver"
	"github.com/edgeconform/edgeconform/suites/peers/varnish"
	"github.com/edgeconform/edgeconform/suites/report"
	"github.com/edgeconform/edgeconform/suites/results"
	"github.com/edgeconform/edgeconform/suites/target"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// registry is every peer the runner knows, in report order. A new peer
// adds one line here (suites/peers/README.md).
func registry() []peers.Peer {
	return []peers.Peer{
		nginx.Peer{},
		varnish.Peer{},
		haproxy.Peer{},
		squid.Peer{},
		caddy.Peer{},
		trafficserver.Peer{},
		httpd.Peer{},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-peers:", err)
		os.Exit(1)
	}
}

func names(ps []peers.Peer) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name())
	}
	return out
}

// selectPeers returns the peers list names (comma-separated; "" or "all":
// every one).
func selectPeers(all []peers.Peer, list string) ([]peers.Peer, error) {
	if list == "" || list == "all" {
		return all, nil
	}
	var out []peers.Peer
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		i := slices.IndexFunc(all, func(p peers.Peer) bool { return p.Name() == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown peer %q (known: %s)", n, strings.Join(names(all), ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("conformance-peers", flag.ContinueOnError)
	list := fs.String("peers", os.Getenv("PEERS"), "comma-separated peers to run (default all: "+strings.Join(names(registry()), ",")+")")
	profile := fs.String("profile", "strict", "timing profile: strict (default) or lab")
	out := fs.String("out", "conformance.out/peers", "output `DIR`")
	procs := fs.Int("procs", 4, "parallel Ginkgo processes per implementation")
	install := fs.Bool("install", os.Geteuid() == 0, "apt-get install missing peers (root only)")
	withRef := fs.Bool("reference", true, "run the in-process reference too")
	labels := fs.String("label-filter", "", "Ginkgo label filter for every run (expectations are compared only for the rules it selects)")
	rerun := fs.Bool("rerun", true, "run the rules whose result differed from the expectation once more, and charge only those that differ again")
	expDir := fs.String("expectations", "suites/peers/expectations", "directory of the checked-in expectations (`DIR/<peer>.json`)")
	update := fs.Bool("update-expectations", false, "write drafts of the expectations from this run (reasons to be written by hand)")
	shot := fs.Bool("screenshot", true, "render report.html in headless Chromium (report.png) when chromium is installed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	prof, err := topology.ProfileByName(*profile)
	if err != nil {
		return err
	}
	chosen, err := selectPeers(registry(), *list)
	if err != nil {
		return err
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return fmt.Errorf("run it from the module's root (no go.mod in %s)", root)
	}
	outDir, err := filepath.Abs(*out)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	o := peers.Options{Root: root, Out: outDir, Profile: prof, Procs: *procs, Install: *install, LabelFilter: *labels, Log: log}
	bin := filepath.Join(outDir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	start := time.Now()
	suite, err := peers.BuildSuite(ctx, o, bin)
	if err != nil {
		return err
	}
	log.Info("built the suites", "dir", bin, "took", time.Since(start).Round(time.Second))

	var files []results.File
	var problems []string
	add := func(path string, err error) {
		if err != nil {
			log.Warn("run", "err", err)
		}
		if path == "" {
			problems = append(problems, err.Error())
			return
		}
		f, rerr := results.Read(path)
		if rerr != nil {
			problems = append(problems, rerr.Error())
			return
		}
		files = append(files, f)
	}
	if *withRef {
		t := time.Now()
		path, err := peers.RunReference(ctx, suite, o)
		log.Info("reference done", "took", time.Since(t).Round(time.Second))
		add(path, err)
		// The reference passes every rule it runs.
		if path != "" && len(files) > 0 {
			ref := files[len(files)-1]
			for _, r := range ref.Rules {
				if r.Status == results.Fail || r.Status == results.Setup {
					problems = append(problems, fmt.Sprintf("reference: %s %s: %s", r.ID, r.Status, firstLine(r.Message)))
				}
			}
		}
	}
	emus, err := target.StartEmulators(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer emus.Close()
	timings := map[string]time.Duration{}
	var varied []string
	for _, p := range chosen {
		if ctx.Err() != nil {
			break
		}
		t := time.Now()
		path, err := peers.RunPeer(ctx, suite, o, emus, p)
		timings[p.Name()] = time.Since(t)
		add(path, err)
		if path == "" {
			continue
		}
		f := files[len(files)-1]
		expPath := filepath.Join(root, *expDir, p.Name()+".json")
		exp, eerr := peers.ReadExpectations(expPath)
		if *update {
			if werr := peers.WriteExpectations(expPath, peers.Draft(f, exp)); werr != nil {
				return werr
			}
			log.Info("wrote a draft of the expectations", "file", expPath)
			continue
		}
		if eerr != nil {
			problems = append(problems, eerr.Error())
			continue
		}
		if exp.Profile != f.Profile {
			problems = append(problems, fmt.Sprintf("%s: expectations are for the %s profile, the run was %s", p.Name(), exp.Profile, f.Profile))
		}
		diffs := exp.Compare(f)
		if len(diffs) > 0 && *rerun && ctx.Err() == nil {
			// A difference is charged only if it shows again: the rules
			// that differed run once more (their specs alone), and a rule
			// whose second result meets its expectation is reported as
			// varying, not as a problem. A real change in the peer or the
			// harness differs both times.
			var v []string
			diffs, v = rerunDiffering(ctx, suite, o, emus, p, exp, diffs, log)
			varied = append(varied, v...)
		}
		for _, d := range diffs {
			problems = append(problems, p.Name()+": "+d.String())
		}
	}
	md := report.Markdown(files)
	if err := os.WriteFile(filepath.Join(outDir, "report.md"), []byte(md), 0o644); err != nil {
		return err
	}
	page, err := report.HTML(files)
	if err != nil {
		return err
	}
	htmlPath := filepath.Join(outDir, "report.html")
	if err := os.WriteFile(htmlPath, page, 0o644); err != nil {
		return err
	}
	if *shot {
		if png, err := report.Screenshot(ctx, htmlPath, filepath.Join(outDir, "report.png")); err != nil {
			log.Warn("screenshot", "err", err)
		} else {
			log.Info("screenshot", "file", png)
		}
	}
	fmt.Fprint(stdout, report.Summary(files))
	for _, p := range chosen {
		if d, ok := timings[p.Name()]; ok {
			fmt.Fprintf(stdout, "%s: %s\n", p.Name(), d.Round(time.Second))
		}
	}
	fmt.Fprintf(stdout, "total: %s; reports: %s\n", time.Since(start).Round(time.Second), outDir)
	for _, v := range varied {
		fmt.Fprintln(stdout, "VARIED (differed, then met its expectation on a rerun):", v)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stdout, "DIFFERS:", p)
		}
		return errors.New(fmt.Sprint(len(problems), " problem(s): a peer did not run, or a result differs from its expectation"))
	}
	return nil
}

// rerunDiffering runs p's suites again for the rules of diffs only (into
// o.Out/rerun/) and returns the differences that remain, and a line for
// each rule that met its expectation the second time.
func rerunDiffering(ctx context.Context, suite peers.Suite, o peers.Options, emus *target.Emulators, p peers.Peer,
	exp peers.Expectations, diffs []peers.Difference, log *slog.Logger) ([]peers.Difference, []string) {
	ids := make([]string, len(diffs))
	for i, d := range diffs {
		ids[i] = d.Rule
	}
	o.LabelFilter = strings.Join(ids, " || ")
	o.Out = filepath.Join(o.Out, "rerun")
	log.Info("rerunning the rules that differed", "peer", p.Name(), "rules", o.LabelFilter)
	path, err := peers.RunPeer(ctx, suite, o, emus, p)
	if path == "" {
		log.Warn("rerun", "peer", p.Name(), "err", err)
		return diffs, nil
	}
	f, err := results.Read(path)
	if err != nil {
		log.Warn("rerun", "peer", p.Name(), "err", err)
		return diffs, nil
	}
	again := map[string]peers.Difference{}
	for _, d := range exp.Compare(f) {
		again[d.Rule] = d
	}
	ran := map[string]bool{}
	for _, r := range f.Rules {
		ran[r.ID] = r.Status != results.NotSelected
	}
	var left []peers.Difference
	var varied []string
	for _, d := range diffs {
		if d2, ok := again[d.Rule]; ok {
			left = append(left, d2)
			continue
		}
		if !ran[d.Rule] { // the rerun did not run it: the first result stands
			left = append(left, d)
			continue
		}
		varied = append(varied, fmt.Sprintf("%s: %s: expected %s, got %s, then as expected", p.Name(), d.Rule, d.Expected, d.Got))
	}
	return left, varied
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
