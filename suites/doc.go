// Package suites will hold the Ginkgo v2 conformance suites that check the
// rules of ../shared/spec/behaviour.md against the reference or any other
// implementation. Nothing is implemented here yet.
package suites
