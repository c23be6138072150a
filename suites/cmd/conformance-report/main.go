// Command conformance-report renders one or several conformance results
// files (EDGECONFORM_RESULTS / -edgeconform.results of the suites) as a
// Markdown summary and a static HTML page, rules down and implementations
// across:
//
//	go run ./suites/cmd/conformance-report [-md FILE] [-html FILE] [-allow-mixed-profiles] results.json...
//
// Results of different timing profiles are refused unless
// -allow-mixed-profiles (then the report says so at the top).
//
// Without -md the Markdown goes to stdout.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/edgeconform/edgeconform/suites/report"
	"github.com/edgeconform/edgeconform/suites/results"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-report:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("conformance-report", flag.ContinueOnError)
	md := fs.String("md", "", "write the Markdown summary to `FILE` (default stdout)")
	html := fs.String("html", "", "write the HTML page to `FILE`")
	mixed := fs.Bool("allow-mixed-profiles", false, "render results of different timing profiles side by side (marked in the report)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("usage: conformance-report [-md FILE] [-html FILE] results.json...")
	}
	var files []results.File
	for _, path := range fs.Args() {
		f, err := results.Read(path)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	if err := report.SameProfile(files); err != nil && !*mixed {
		return fmt.Errorf("%w (-allow-mixed-profiles renders them anyway, marked)", err)
	}
	text := report.Markdown(files)
	if *md == "" {
		if _, err := io.WriteString(stdout, text); err != nil {
			return err
		}
	} else if err := os.WriteFile(*md, []byte(text), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", *md, err)
	}
	if *html != "" {
		page, err := report.HTML(files)
		if err != nil {
			return err
		}
		if err := os.WriteFile(*html, page, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", *html, err)
		}
	}
	return nil
}
