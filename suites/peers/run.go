package peers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/edgeconform/edgeconform/suites/results"
	"github.com/edgeconform/edgeconform/suites/target"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// Options configure a run of the suites against peers.
type Options struct {
	// Root is the module's root directory (go.mod): the suites are built
	// from it, into Out/bin (never into the source tree).
	Root string
	// Out is the output directory: bin/, one directory per
	// implementation (results.json, ginkgo.json, the peer's log and its
	// generated configuration), report.md and report.html.
	Out string
	// Profile is the default timing profile (a peer's ProfileChooser may
	// pick another).
	Profile topology.Profile
	// Procs is the number of parallel Ginkgo processes per implementation.
	Procs int
	// Install lets the runner apt-get install a missing peer (as root).
	Install bool
	// LabelFilter, if set, selects specs (Ginkgo --label-filter).
	LabelFilter string
	// Go is the go command ("go").
	Go string
	// Log receives progress.
	Log *slog.Logger
}

// Suite is the conformance suite built outside the source tree.
type Suite struct {
	Ginkgo, Test string
}

// BuildSuite builds the Ginkgo CLI and the conformance test binary into
// dir.
func BuildSuite(ctx context.Context, o Options, dir string) (Suite, error) {
	s := Suite{Ginkgo: filepath.Join(dir, "ginkgo"), Test: filepath.Join(dir, "conformance.test")}
	for _, args := range [][]string{
		{"build", "-o", s.Ginkgo, "github.com/onsi/ginkgo/v2/ginkgo"},
		{"test", "-c", "-o", s.Test, "./suites/conformance"},
	} {
		cmd := exec.CommandContext(ctx, o.goCmd(), args...)
		cmd.Dir = o.Root
		if out, err := cmd.CombinedOutput(); err != nil {
			return s, fmt.Errorf("%s %s: %w\n%s", o.goCmd(), strings.Join(args, " "), err, out)
		}
	}
	return s, nil
}

func (o Options) goCmd() string {
	if o.Go == "" {
		return "go"
	}
	return o.Go
}

// ErrNotInstalled says a peer's binary is missing and was not installed.
var ErrNotInstalled = errors.New("not installed")

// FindBinary returns the first of p's binaries found; if none is and
// install is set and the process is root, it installs p's Debian package
// with apt-get first. Otherwise the error names the command to run.
func FindBinary(ctx context.Context, p Peer, install bool, log *slog.Logger) (string, error) {
	find := func() string {
		for _, b := range p.Binaries() {
			if path, err := exec.LookPath(b); err == nil {
				return path
			}
		}
		return ""
	}
	if b := find(); b != "" {
		return b, nil
	}
	cmdline := []string{"apt-get", "install", "-y", "--no-install-recommends", p.Package()}
	if !install || os.Geteuid() != 0 {
		return "", fmt.Errorf("%s: %w (none of %s on PATH): run `sudo %s` (a policy-rc.d exiting 101 keeps its service from starting)",
			p.Name(), ErrNotInstalled, strings.Join(p.Binaries(), ", "), strings.Join(cmdline, " "))
	}
	log.Info("installing", "peer", p.Name(), "command", strings.Join(cmdline, " "))
	cmd := exec.CommandContext(ctx, cmdline[0], cmdline[1:]...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: installing %s: %w\n%s", p.Name(), p.Package(), err, tail(out, 2000))
	}
	if b := find(); b != "" {
		return b, nil
	}
	return "", fmt.Errorf("%s: installed %s, but none of %s is on PATH", p.Name(), p.Package(), strings.Join(p.Binaries(), ", "))
}

// FreeAddr returns a free loopback address.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// PeerTopology is the loopback topology for peers in prof, reaching emus.
func PeerTopology(prof topology.Profile, emus *target.Emulators) (*topology.Neutral, error) {
	p := LoopbackParams(prof, emus.Ports)
	p.S3 = target.EmulatorS3()
	p.DefaultPortHost = emus.DefaultPortIP
	return topology.BuildNeutral(p)
}

// ProfileOf is the profile p runs in (its ProfileChooser's, else def) and
// the reason.
func ProfileOf(p Peer, def topology.Profile) (topology.Profile, string, error) {
	pc, ok := p.(ProfileChooser)
	if !ok {
		return def, "", nil
	}
	name, why := pc.Profile()
	prof, err := topology.ProfileByName(name)
	if err != nil {
		return def, "", fmt.Errorf("%s: %w", p.Name(), err)
	}
	return prof, why, nil
}

// Process is a running peer.
type Process struct {
	cmd  *exec.Cmd
	done chan error
	log  *os.File
}

// StartPeer starts setup's command in dir with its output appended to
// logPath, in its own process group.
func StartPeer(setup *Setup, dir, logPath string) (*Process, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the peer's log: %w", err)
	}
	cmd := exec.Command(setup.Command[0], setup.Command[1:]...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, lf, lf
	cmd.Env = append(os.Environ(), setup.Environ...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("starting %s: %w", setup.Command[0], err)
	}
	p := &Process{cmd: cmd, done: make(chan error, 1), log: lf}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// Pid is the peer's process ID (its process group's too).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// WaitHealthy polls url (sending Host host) until it answers with any
// status, the process exits, or timeout passes.
func (p *Process) WaitHealthy(ctx context.Context, url, host string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("health check %s: %w", url, err)
		}
		req.Host = host
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil
		}
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("the peer exited before answering %s: %v", url, err)
		case <-ctx.Done():
			return fmt.Errorf("the peer did not answer %s within %s", url, timeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop sends SIGTERM to the peer's process group, then SIGKILL after
// grace, and waits for it.
func (p *Process) Stop(grace time.Duration) error {
	defer p.log.Close()
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	err := <-p.done
	p.done <- err
	return fmt.Errorf("the peer did not stop within %s of SIGTERM: killed", grace)
}

// SuiteRun is one run of the suites against one implementation.
type SuiteRun struct {
	Name    string
	Env     map[string]string // EDGECONFORM_* for the suites
	Dir     string            // output directory: results.json, ginkgo.json, suite.log
	Results string
}

// RunSuite runs the conformance suite against r's target with Ginkgo's
// parallel processes; the results file is written even when specs fail
// (the returned error says the suite failed; results tell which).
func RunSuite(ctx context.Context, s Suite, o Options, r SuiteRun) error {
	args := []string{"-p", fmt.Sprintf("--procs=%d", max(o.Procs, 1)), "--silence-skips", "--timeout=25m",
		"--output-dir=" + r.Dir, "--json-report=ginkgo.json", "--junit-report=junit.xml"}
	if o.LabelFilter != "" {
		args = append(args, "--label-filter="+o.LabelFilter)
	}
	args = append(args, s.Test)
	lf, err := os.Create(filepath.Join(r.Dir, "suite.log"))
	if err != nil {
		return fmt.Errorf("creating the suite's log: %w", err)
	}
	defer lf.Close()
	cmd := exec.CommandContext(ctx, s.Ginkgo, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = r.Dir, lf, lf
	cmd.Env = os.Environ()
	for k, v := range r.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, "EDGECONFORM_RESULTS="+r.Results, "EDGECONFORM_NAME="+r.Name)
	err = cmd.Run()
	if _, serr := os.Stat(r.Results); serr != nil {
		return fmt.Errorf("%s: the suite wrote no results (%v; see %s)", r.Name, err, lf.Name())
	}
	if err != nil {
		return fmt.Errorf("%s: some specs did not pass (%w)", r.Name, err)
	}
	return nil
}

// Annotate adds setup's declared limits to the results file at path.
func Annotate(path string, setup *Setup, note string) error {
	f, err := results.Read(path)
	if err != nil {
		return err
	}
	for _, l := range setup.Limits {
		f.Limits = append(f.Limits, results.Limit{Rule: l.Rule, Scenario: l.Scenario, Reason: l.Reason, Doc: l.Doc})
	}
	if note != "" {
		f.Notes = append(f.Notes, note)
	}
	f.Notes = append(f.Notes, setup.Notes...)
	return results.Write(path, f)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// RunPeer runs the suites against p: it finds (or installs) the binary,
// generates the configuration into a new temporary directory, starts the
// peer on a free loopback port against emus, waits for its health check,
// runs the suites, stops it, and keeps its log, its generated files and
// the results in o.Out/<name>/. It returns the results file's path; an
// error with a path means some specs did not pass.
func RunPeer(ctx context.Context, s Suite, o Options, emus *target.Emulators, p Peer) (string, error) {
	log := o.Log.With("peer", p.Name())
	out := filepath.Join(o.Out, p.Name())
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", p.Name(), err)
	}
	bin, err := FindBinary(ctx, p, o.Install, log)
	if err != nil {
		return "", err
	}
	prof, why, err := ProfileOf(p, o.Profile)
	if err != nil {
		return "", err
	}
	topo, err := PeerTopology(prof, emus)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p.Name(), err)
	}
	tmp, err := os.MkdirTemp("", "edgeconform-"+p.Name()+"-")
	if err != nil {
		return "", fmt.Errorf("%s: %w", p.Name(), err)
	}
	defer os.RemoveAll(tmp)
	env := Env{Dir: filepath.Join(tmp, "peer"), Binary: bin, Profile: prof.Name,
		OriginCA: filepath.Join(tmp, "origin-ca.pem"), Resolve: LoopbackResolve()}
	if env.Listen, err = FreeAddr(); err != nil {
		return "", err
	}
	topoPath := filepath.Join(tmp, topology.ParamsFile)
	tj, err := topology.NeutralJSON(topo)
	if err != nil {
		return "", err
	}
	for _, w := range []struct {
		path string
		data []byte
	}{{topoPath, tj}, {env.OriginCA, emus.Emulator.CA().CertPEM()}, {filepath.Join(out, topology.ParamsFile), tj}} {
		if err := os.WriteFile(w.path, w.data, 0o644); err != nil {
			return "", fmt.Errorf("%s: %w", p.Name(), err)
		}
	}
	if err := os.Mkdir(env.Dir, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", p.Name(), err)
	}
	setup, err := p.Generate(topo, env)
	if err != nil {
		return "", fmt.Errorf("%s: generating its configuration: %w", p.Name(), err)
	}
	if err := setup.Check(topo, env); err != nil {
		return "", fmt.Errorf("%s: %w", p.Name(), err)
	}
	// Keep what was generated (before the peer adds its own files).
	if err := copyTree(env.Dir, filepath.Join(out, "config")); err != nil {
		return "", fmt.Errorf("%s: keeping its configuration: %w", p.Name(), err)
	}
	log.Info("starting", "command", strings.Join(setup.Command, " "), "listen", env.Listen, "profile", prof.Name)
	proc, err := StartPeer(setup, env.Dir, filepath.Join(out, "peer.log"))
	if err != nil {
		return "", fmt.Errorf("%s: %w", p.Name(), err)
	}
	base := "http://" + env.Listen
	health := setup.Health
	if strings.HasPrefix(health, "/") {
		health = base + health
	}
	var runErr error
	resultsPath := filepath.Join(out, "results.json")
	os.Remove(resultsPath)
	if err := proc.WaitHealthy(ctx, health, topo.ClientHost, 30*time.Second); err != nil {
		runErr = fmt.Errorf("%s: %w (log: %s)", p.Name(), err, filepath.Join(out, "peer.log"))
	} else {
		started := time.Now()
		r := SuiteRun{Name: p.Name(), Dir: out, Results: resultsPath, Env: map[string]string{
			target.EnvTarget: base, target.EnvControl: emus.ControlURL, target.EnvTopology: topoPath,
			target.EnvProfile: prof.Name, target.EnvClientHost: topo.ClientHost,
		}}
		if setup.Logs != nil {
			r.Env[target.EnvLogs] = setup.Logs.Path
		}
		runErr = RunSuite(ctx, s, o, r)
		log.Info("suites done", "took", time.Since(started).Round(time.Second), "err", runErr)
	}
	if err := proc.Stop(10 * time.Second); err != nil {
		log.Warn("stopping", "err", err)
	}
	if setup.Logs != nil {
		copyFile(setup.Logs.Path, filepath.Join(out, filepath.Base(setup.Logs.Path)))
	}
	if _, err := os.Stat(resultsPath); err != nil {
		return "", runErr
	}
	note := ""
	if why != "" {
		note = fmt.Sprintf("runs in the %s profile: %s", prof.Name, why)
	}
	if err := Annotate(resultsPath, setup, note); err != nil {
		return "", err
	}
	return resultsPath, runErr
}

// RunReference runs the suites against the in-process reference.
func RunReference(ctx context.Context, s Suite, o Options) (string, error) {
	out := filepath.Join(o.Out, "reference")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(out, "results.json")
	os.Remove(path)
	err := RunSuite(ctx, s, o, SuiteRun{Name: "reference", Dir: out, Results: path, Env: map[string]string{
		target.EnvTarget: "reference", target.EnvProfile: o.Profile.Name, "EDGECONFORM_RUN_KNOWN_BUGS": "1",
	}})
	if _, serr := os.Stat(path); serr != nil {
		return "", err
	}
	return path, err
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// copyTree copies the regular files under from to to.
func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(path, dst)
	})
}
