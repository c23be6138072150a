package cdn_test

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEExample keeps cdn_test.go and docs/deploy.md's example the
// same code.
func TestREADMEExample(t *testing.T) {
	readme, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("cdn_test.go")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "// cdn_test.go in your module"
	r, s := string(readme), string(src)
	i, j := strings.Index(r, marker), strings.Index(s, marker)
	if i < 0 || j < 0 {
		t.Fatalf("marker %q missing (README %d, cdn_test.go %d)", marker, i, j)
	}
	block := r[i:]
	block = block[:strings.Index(block, "```")]
	if block != s[j:] {
		t.Fatal("docs/deploy.md's example and deploy/example/cdn_test.go differ: copy one to the other")
	}
}
