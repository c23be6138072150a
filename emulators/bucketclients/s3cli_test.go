package bucketclients

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func awsEnv(t *testing.T) []string {
	dir := t.TempDir()
	return []string{"AWS_ACCESS_KEY_ID=" + akid, "AWS_SECRET_ACCESS_KEY=" + secret, "AWS_DEFAULT_REGION=" + region,
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER="}
}

// The aws CLI (v2, Debian's awscli): bucket creation, small and multipart
// (20 MiB, 8 MiB parts) uploads, download, listing, server-side copy, sync
// twice (the second uploads nothing) and recursive delete (DeleteObjects).
func TestAWSCLI(t *testing.T) {
	aws := client(t, "aws CLI", "/usr/bin/aws", "awscli")
	e := startEmulator(t)
	env := awsEnv(t)
	ep := []string{"--endpoint-url", e.s3}
	cli := func(args ...string) string { return run(t, env, aws, append(ep, args...)...) }
	src := t.TempDir()
	files := writeTree(t, src, map[string]int{"small.txt": 1000, "big.bin": 20 << 20, "tree/a.ts": 300 << 10, "tree/sub/b.ts": 5, "tree/empty": 0})

	cli("s3", "mb", "s3://cli-made")
	if out := cli("s3", "ls"); !strings.Contains(out, "cli-made") || !strings.Contains(out, bucket) {
		t.Fatalf("s3 ls: %s", out)
	}
	cli("s3", "cp", filepath.Join(src, "small.txt"), "s3://"+bucket+"/small.txt")
	cli("s3", "cp", filepath.Join(src, "big.bin"), "s3://"+bucket+"/big.bin")
	dl := t.TempDir()
	cli("s3", "cp", "s3://"+bucket+"/big.bin", filepath.Join(dl, "big.bin"))
	sameFile(t, filepath.Join(dl, "big.bin"), files["big.bin"])
	head := cli("s3api", "head-object", "--bucket", bucket, "--key", "big.bin")
	if !strings.Contains(head, `-3\"`) || !strings.Contains(head, `"ContentLength": 20971520`) {
		t.Errorf("big.bin is not a 3-part multipart object: %s", head)
	}
	cli("s3", "cp", "s3://"+bucket+"/big.bin", "s3://cli-made/copied.bin")
	cli("s3", "cp", "s3://cli-made/copied.bin", filepath.Join(dl, "copied.bin"))
	sameFile(t, filepath.Join(dl, "copied.bin"), files["big.bin"])

	first := cli("s3", "sync", filepath.Join(src, "tree"), "s3://"+bucket+"/tree/")
	if strings.Count(first, "upload:") != 3 {
		t.Errorf("first sync: %s", first)
	}
	if second := cli("s3", "sync", filepath.Join(src, "tree"), "s3://"+bucket+"/tree/"); strings.TrimSpace(second) != "" {
		t.Errorf("second sync transferred something: %s", second)
	}
	back := t.TempDir()
	cli("s3", "sync", "s3://"+bucket+"/tree/", back)
	sameFile(t, filepath.Join(back, "sub", "b.ts"), files["tree/sub/b.ts"])
	out := cli("s3", "rm", "--recursive", "s3://"+bucket+"/tree/")
	if strings.Count(out, "delete:") != 3 {
		t.Errorf("rm --recursive: %s", out)
	}
	if ls := cli("s3", "ls", "--recursive", "s3://"+bucket+"/"); strings.Contains(ls, "tree/") || !strings.Contains(ls, "big.bin") {
		t.Errorf("after rm: %s", ls)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "s3", "blobs")); err != nil {
		t.Errorf("no disk store: %v", err)
	}
}

// s3cmd: put (a 20 MiB file goes multipart in 15 MiB chunks), get, ls,
// info, cp, sync twice and del.
func TestS3cmd(t *testing.T) {
	s3cmd := client(t, "s3cmd", "/usr/bin/s3cmd", "s3cmd")
	e := startEmulator(t)
	hostport := strings.TrimPrefix(e.s3, "http://")
	cfg := filepath.Join(t.TempDir(), "s3cfg")
	os.WriteFile(cfg, []byte("[default]\n"), 0o644)
	args := []string{"-c", cfg, "--access_key=" + akid, "--secret_key=" + secret, "--host=" + hostport,
		"--host-bucket=" + hostport, "--no-ssl", "--region=" + region, "--no-check-certificate"}
	cli := func(a ...string) string { return run(t, nil, s3cmd, append(args, a...)...) }
	src := t.TempDir()
	files := writeTree(t, src, map[string]int{"big.bin": 20 << 20, "tree/x.txt": 100, "tree/y/z.txt": 2000})
	cli("put", filepath.Join(src, "big.bin"), "s3://"+bucket+"/big.bin")
	dl := t.TempDir()
	cli("get", "s3://"+bucket+"/big.bin", filepath.Join(dl, "big.bin"))
	sameFile(t, filepath.Join(dl, "big.bin"), files["big.bin"])
	if info := cli("info", "s3://"+bucket+"/big.bin"); !strings.Contains(info, "20971520") {
		t.Errorf("info: %s", info)
	}
	cli("cp", "s3://"+bucket+"/big.bin", "s3://"+bucket+"/copy.bin")
	first := cli("sync", filepath.Join(src, "tree")+"/", "s3://"+bucket+"/tree/")
	second := cli("sync", filepath.Join(src, "tree")+"/", "s3://"+bucket+"/tree/")
	if strings.Count(first, "upload:") != 2 || strings.Contains(second, "upload:") {
		t.Errorf("sync: first %q, second %q", first, second)
	}
	if ls := cli("ls", "--recursive", "s3://"+bucket); !strings.Contains(ls, "copy.bin") || !strings.Contains(ls, "tree/y/z.txt") {
		t.Errorf("ls: %s", ls)
	}
	cli("del", "s3://"+bucket+"/copy.bin")
	if ls := cli("ls", "s3://"+bucket); strings.Contains(ls, "copy.bin") {
		t.Errorf("after del: %s", ls)
	}
}
