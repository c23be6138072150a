package images

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The build context is a pure function of its inputs (the image tag is its
// hash), holds exactly the Dockerfile, the binary and, for edgecache, the CA
// bundle, and the Dockerfile pulls nothing.
func TestContextTar(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "edgecache")
	if err := os.WriteFile(bin, []byte("not really a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := contextTar(Edgecache(), bin)
	if err != nil {
		t.Fatal(err)
	}
	b, err := contextTar(Edgecache(), bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two build contexts of the same inputs differ")
	}
	files := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(a))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		files[h.Name] = string(body)
	}
	if len(files) != 3 || files["edgecache"] != "not really a binary" || files["ca-certificates.crt"] == "" {
		t.Fatalf("context files: %v", keys(files))
	}
	df := files["Dockerfile"]
	for _, want := range []string{"FROM scratch\n", "COPY edgecache /edgecache\n", "USER 65534:65534\n", `ENTRYPOINT ["/edgecache"]`} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q:\n%s", want, df)
		}
	}
	if strings.Count(df, "FROM ") != 1 {
		t.Errorf("Dockerfile must have one FROM (scratch):\n%s", df)
	}

	emu, err := contextTar(Originemu(), bin)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(emu, []byte("ca-certificates.crt")) {
		t.Error("the originemu context carries a CA bundle it does not need")
	}
}

func TestFindModuleRoot(t *testing.T) {
	root, err := FindModuleRoot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !isModuleRoot(root) {
		t.Fatalf("%s holds no go.mod for %s", root, ModulePath)
	}
	if isModuleRoot(t.TempDir()) {
		t.Fatal("an empty directory is not the module root")
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The key of an image is computed without building, is stable, and differs
// between images and architectures.
func TestSourceKey(t *testing.T) {
	ctx := context.Background()
	root, err := FindModuleRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, err := sourceKey(ctx, root, Originemu(), "amd64")
	if err != nil {
		t.Fatal(err)
	}
	b, err := sourceKey(ctx, root, Originemu(), "amd64")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sourceKey(ctx, root, Edgecache(), "amd64")
	if err != nil {
		t.Fatal(err)
	}
	d, err := sourceKey(ctx, root, Originemu(), "arm64")
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 64 || a != b || a == c || a == d {
		t.Fatalf("keys: originemu %s, again %s, edgecache %s, arm64 %s", a, b, c, d)
	}
}
