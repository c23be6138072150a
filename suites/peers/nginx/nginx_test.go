package nginx

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/suites/peers/peertest"
	"github.com/edgeconform/edgeconform/suites/topology"
)

// The generated configuration maps the topology's settings, and nginx
// itself accepts it (nginx -t) when installed.
func TestGenerate(t *testing.T) {
	for _, prof := range []topology.Profile{topology.Strict, topology.Lab} {
		topo, env, setup := peertest.Generate(t, Peer{}, prof)
		b, err := os.ReadFile(filepath.Join(env.Dir, "nginx.conf"))
		if err != nil {
			t.Fatal(err)
		}
		conf := string(b)
		a, _ := topo.Listener(topology.ListenerA)
		att9, _ := topo.Origin(topology.OriginName("att9", 0))
		for _, want := range []string{
			"upstream o_att3-0 { server 127.0.0.1:" + itoa(a.Port) + " max_fails=0;",
			"location ^~ /c/att3/ {",
			"proxy_next_upstream_tries 4;",                                   // att3: 2+1+1 attempts
			"proxy_next_upstream_timeout " + ms(att9.Timeouts.MaxAttemptsMs), // ATT-9
			"proxy_set_header Host \"" + topo.OriginRewriteHost + "\";",      // hst-origin
			"proxy_ssl_trusted_certificate " + env.OriginCA,
			`if ($http_x_edgeconform_prio = "first") { rewrite ^ /__r`, // MTH-4
			"location ~* ^/c/icase/ {",
			"server_name *.mth.edge.test;",
			"server_name mthprefix.*;",
			"proxy_cache_valid 404 60s;", // cch-negpol
			"slice 2m;",
			`|$edgeconform_cookie_edgeconform_variant|`, // cch-key's cookie
			`map $http_cookie $edgeconform_cookie_edgeconform_variant`,
			`proxy_cache_key "$host$edgeconform_key_uri$is_args$args|$slice_range";`, // variables, not literals
		} {
			if !strings.Contains(conf, want) {
				t.Errorf("%s: nginx.conf lacks %q", prof.Name, want)
			}
		}
		if strings.Contains(conf, "/var/") || strings.Contains(conf, "/etc/nginx") {
			t.Errorf("%s: the configuration names a path outside the peer's directory", prof.Name)
		}
		if got := setup.LimitsFor("ATT-9", "att9"); len(got) == 0 {
			t.Errorf("no limit declared for ATT-9")
		}
		bin, err := exec.LookPath("nginx")
		if err != nil {
			t.Log("nginx not installed (apt-get install -y nginx): skipping nginx -t")
			continue
		}
		out, err := exec.Command(bin, "-t", "-p", env.Dir, "-c", filepath.Join(env.Dir, "nginx.conf"), "-e", env.Path("error.log")).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: nginx -t: %v\n%s", prof.Name, err, out)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
