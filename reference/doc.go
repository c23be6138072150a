// Package reference will hold the reference edge cache, which behaves as
// Google Media CDN documents its origin behaviour (see the README's road
// map). Nothing is implemented here yet.
package reference
