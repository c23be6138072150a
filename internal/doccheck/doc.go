// Package doccheck holds the documentation to the tree in tests: every
// relative link in the module's Markdown files leads to a file that exists
// (and to a heading of it, for a #fragment), and the README's package map
// has one row for every package of the module and none for a package that
// is gone. It has no code of its own.
package doccheck
