// Package conformance holds the Ginkgo conformance suites: one file per
// area of behaviour.md (mth_test.go, att_test.go, ...), every spec
// labelled with its rule IDs, area and level. See suites/README.md.
package conformance
