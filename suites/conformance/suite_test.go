package conformance

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgeconform/edgeconform/suites/results"
	"github.com/edgeconform/edgeconform/suites/target"
	"github.com/edgeconform/edgeconform/suites/topology"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// settings come from the EDGECONFORM_* variables, overridden by flags:
// go test ./suites/conformance -args -edgeconform.target=URL ...
var settings = target.SettingsFromEnv()

func init() {
	flag.StringVar(&settings.Target, "edgeconform.target", settings.Target, "reference, or the client-facing URL of an implementation ("+target.EnvTarget+")")
	flag.StringVar(&settings.Control, "edgeconform.control", settings.Control, "control API URL of the emulators the target reaches ("+target.EnvControl+")")
	flag.StringVar(&settings.Profile, "edgeconform.profile", settings.Profile, "timing profile: lab or strict ("+target.EnvProfile+")")
	flag.StringVar(&settings.Topology, "edgeconform.topology", settings.Topology, "topology.json the target was configured with ("+target.EnvTopology+")")
	flag.BoolVar(&settings.EXT, "edgeconform.ext", settings.EXT, "run EXT specs against an external target ("+target.EnvEXT+")")
	flag.StringVar(&settings.Results, "edgeconform.results", settings.Results, "write the results file here ("+target.EnvResults+")")
	flag.BoolVar(&settings.ReferenceImpl, "edgeconform.reference-impl", settings.ReferenceImpl, "the external target is the reference ("+target.EnvReferenceImpl+")")
	flag.StringVar(&settings.Name, "edgeconform.name", settings.Name, "implementation name in reports ("+target.EnvName+")")
	flag.StringVar(&settings.Logs, "edgeconform.logs", settings.Logs, "JSON Lines log records of an external target ("+target.EnvLogs+")")
	flag.Func("edgeconform.edges", "edge node URLs sharing one shield, comma-separated ("+target.EnvEdges+")", func(v string) error {
		settings.Edges = target.SplitURLs(v)
		return nil
	})
}

// envRunKnownBugs makes specs marked knownReferenceBug run against the
// reference too (make conformance sets it, so the report shows them).
const envRunKnownBugs = "EDGECONFORM_RUN_KNOWN_BUGS"

var runKnownBugs, _ = strconv.ParseBool(os.Getenv(envRunKnownBugs))

func TestConformance(t *testing.T) {
	RegisterFailHandler(conformanceFail)
	RunSpecs(t, "edgeconform conformance")
}

// env is the target every spec talks to, started in BeforeSuite (each
// parallel process starts its own in-process reference).
var env *target.Target

// client talks to the target; it never follows redirects.
var client *http.Client

// runID keeps this run's paths apart from earlier runs' (a real CDN's
// cache keeps objects).
var runID string

var _ = BeforeSuite(func(ctx SpecContext) {
	t, err := target.Start(ctx, settings)
	Expect(err).NotTo(HaveOccurred(), "starting the target")
	env = t
	DeferCleanup(t.Close)
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 512, DisableCompression: true}
	client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	DeferCleanup(tr.CloseIdleConnections)
	runID = fmt.Sprintf("r%s-p%d", strings.ToLower(fmt.Sprintf("%x", time.Now().UnixNano()/1e6)), GinkgoParallelProcess())
	measureRTT()
	if env.Reference {
		AddReportEntry("topology", string(env.Config), ReportEntryVisibilityNever)
	}
}, NodeTimeout(60*time.Second))

// Every spec: EXT rules run against the reference only, unless asked.
var _ = BeforeEach(func() {
	labels := CurrentSpecReport().Labels()
	if has(labels, "EXT") && !has(labels, "DOC") && !isReference() && !settings.EXT {
		Skip("EXT rule: runs against the reference only unless " + target.EnvEXT + "=1")
	}

})

var _ = ReportAfterSuite("edgeconform results file", func(r Report) {
	if settings.Results == "" {
		return
	}
	name, where := settings.Name, settings.Target
	if name == "" {
		name = settings.Target
	}
	prof, _ := topology.ProfileByName(settings.Profile)
	f := results.FromReport(r, results.Meta{Implementation: name, Target: where, Profile: prof.Name})
	Expect(results.Write(settings.Results, f)).To(Succeed())
})

// isReference reports whether the implementation under test is the
// reference: in-process, or external with EDGECONFORM_REFERENCE_IMPL=1.
func isReference() bool { return env.Reference || settings.ReferenceImpl }

// setupPrefix starts the message of a set-up failure.
const setupPrefix = "setup failure: "

// conformanceFail is gomega's fail handler: a failed INT spec becomes an
// observation (recorded, then skipped), anything else fails the spec.
func conformanceFail(message string, callerSkip ...int) {
	skip := 1
	if len(callerSkip) > 0 {
		skip += callerSkip[0]
	}
	labels := CurrentSpecReport().Labels()
	interpretation := (has(labels, "INT") && !has(labels, "DOC")) || has(labels, readingLabel)
	if interpretation && !strings.HasPrefix(message, setupPrefix) {
		AddReportEntry(results.EntryObservation, message)
		Skip("observation (INT rule: the target differs from the reference's interpretation): "+message, skip)
	}
	Fail(message, skip)
}

// readingLabel marks a spec under a DOC rule that checks the reference's
// reading of it (an INT choice of the README, without a rule of its own):
// its failures are observations too. Decorate with Reading.
const readingLabel = "reading"

// Reading is the decorator for such a spec.
var Reading = Label(readingLabel)

func has(labels []string, l string) bool {
	for _, x := range labels {
		if x == l {
			return true
		}
	}
	return false
}

// setupOK fails the spec as a set-up failure when err is not nil: the
// emulators or the topology, not the target, went wrong.
func setupOK(err error, doing string, args ...any) {
	GinkgoHelper()
	if err == nil {
		return
	}
	setupFail(fmt.Sprintf(doing, args...) + ": " + err.Error())
}

// setupFail fails the spec as a set-up failure.
func setupFail(msg string) {
	GinkgoHelper()
	AddReportEntry(results.EntrySetup, msg)
	Fail(setupPrefix + msg)
}

// knownReferenceBug, called first in a spec, marks a spec the reference
// is known to fail: a bug in the reference, reported, not yet fixed. Plain
// `go test` (make test) skips it against the reference so that the build
// stays green; make conformance sets EDGECONFORM_RUN_KNOWN_BUGS=1, runs
// it, and the report shows the failure. Other implementations always run
// it (EDGECONFORM_REFERENCE_IMPL=1 says an external target is the reference).
func knownReferenceBug(what string) {
	AddReportEntry("known reference bug", what)
	if isReference() && !runKnownBugs {
		Skip("known reference bug (run it with " + envRunKnownBugs + "=1): " + what)
	}
}
