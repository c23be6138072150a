package emuclient_test

import (
	"os/exec"
	"strings"
	"testing"
)

// #16 item 6: a client program links the API types, not the server.
func TestClientDoesNotLinkTheServer(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/edgeconform/edgeconform/emulators/emuclient").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v: %s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, server := range []string{"/emulators/originemu", "/emulators/control", "/emulators/wire/h2", "/emulators/wire/http1", "/emulators/proxy", "/emulators/testca"} {
			if strings.HasSuffix(dep, server) {
				t.Errorf("emuclient depends on %s", dep)
			}
		}
	}
}
