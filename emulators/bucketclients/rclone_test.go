package bucketclients

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rclone sync to each backend, twice: the first copies every file, the
// second transfers nothing and reports no errors; a sync back reproduces
// the tree.
func TestRcloneSync(t *testing.T) {
	rclone := client(t, "rclone", "/usr/bin/rclone", "rclone")
	e := startEmulator(t)
	env := []string{
		"RCLONE_CONFIG=" + filepath.Join(t.TempDir(), "rclone.conf"),
		"RCLONE_CONFIG_EMUS3_TYPE=s3", "RCLONE_CONFIG_EMUS3_PROVIDER=Other", "RCLONE_CONFIG_EMUS3_ENDPOINT=" + e.s3,
		"RCLONE_CONFIG_EMUS3_ACCESS_KEY_ID=" + akid, "RCLONE_CONFIG_EMUS3_SECRET_ACCESS_KEY=" + secret,
		"RCLONE_CONFIG_EMUS3_REGION=" + region, "RCLONE_CONFIG_EMUS3_FORCE_PATH_STYLE=true",
		"RCLONE_CONFIG_EMUGCS_TYPE=google cloud storage", "RCLONE_CONFIG_EMUGCS_ENDPOINT=" + e.gcs + "/storage/v1/",
		"RCLONE_CONFIG_EMUGCS_ANONYMOUS=true",
	}
	src := t.TempDir()
	files := writeTree(t, src, map[string]int{"seg/1.ts": 100 << 10, "seg/2.ts": 7 << 20, "index.m3u8": 300, "deep/a/b/c.txt": 10, "empty": 0})
	for _, remote := range []string{"emus3", "emugcs"} {
		t.Run(remote, func(t *testing.T) {
			dst := remote + ":" + bucket + "/synced"
			first := run(t, env, rclone, "sync", src, dst, "--stats-one-line", "-v", "--stats", "0")
			if n := strings.Count(first, "Copied (new)"); n != len(files) {
				t.Errorf("first sync copied %d of %d files:\n%s", n, len(files), first)
			}
			second := run(t, env, rclone, "sync", src, dst, "-v", "--stats", "0")
			for _, bad := range []string{"Copied", "ERROR", "Updated modification time", "Deleted"} {
				if strings.Contains(second, bad) {
					t.Errorf("second sync did something (%s):\n%s", bad, second)
				}
			}
			if !strings.Contains(second, "There was nothing to transfer") && !strings.Contains(second, "Transferred:   \t          0 B") {
				t.Logf("second sync output:\n%s", second)
			}
			back := t.TempDir()
			run(t, env, rclone, "sync", dst, back)
			for name, data := range files {
				sameFile(t, filepath.Join(back, name), data)
			}
			if out := run(t, env, rclone, "check", src, dst); strings.Contains(out, "ERROR") {
				t.Errorf("rclone check: %s", out)
			}
			os.RemoveAll(back)
		})
	}
}
