package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgeconform/edgeconform/reference/config"
	"github.com/edgeconform/edgeconform/suites/topology"
)

const ports = "a=1,b=2,c=3,h2=4,https=5,expired=6,wrongname=7,untrusted=8,refuse=9,blackhole=10,syndrop=11"

func TestReferenceFormat(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"-format", "reference", "-profile", "lab", "-ports", ports,
		"-client-host", "edge.test", "-origin-host", "origin.test", "-out", dir}, io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := config.LoadFile(filepath.Join(dir, "edgecache.yaml"), config.Options{Lab: true}); err != nil {
		t.Fatal(err)
	}
	p, err := topology.ReadParams(filepath.Join(dir, topology.ParamsFile))
	if err != nil || !p.Reference || p.Ports["syndrop"] != 11 || p.Profile.Name != "lab" {
		t.Fatalf("params %+v: %v", p, err)
	}
	// The same file is the neutral topology, conforming to its schema.
	n, err := topology.LoadNeutral(filepath.Join(dir, topology.ParamsFile))
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := n.Origin(topology.OriginName("att3", 0)); !ok || o.Port != 1 || o.Address != "origin.test" || o.MaxAttempts != 2 {
		t.Fatalf("att3-0 %+v", o)
	}
	if _, ok := n.Scenario("rdr-allow"); !ok {
		t.Fatal("the reference's topology has no rdr-allow")
	}
}

func TestMediaCDNFormat(t *testing.T) {
	dir := t.TempDir()
	if err := run([]string{"-format", "mediacdn", "-profile", "strict", "-ports", ports, "-project", "p",
		"-client-host", "cdn.example.com", "-origin-host", "origins.example.net", "-out", dir}, io.Discard); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join(dir, "deploy.sh"))
	if err != nil || !strings.Contains(string(script), "gcloud edge-cache services import edgeconform --source=service.yaml") {
		t.Fatalf("deploy.sh: %v\n%s", err, script)
	}
	if _, err := os.Stat(filepath.Join(dir, "origins", "att3-0.yaml")); err != nil {
		t.Fatal(err)
	}
	n, err := topology.LoadNeutral(filepath.Join(dir, topology.ParamsFile))
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := n.Origin(topology.OriginName("att3", 0)); o.Failover != topology.OriginName("att3", 1) {
		t.Fatalf("neutral failover names are not plain origin names: %+v", o)
	}
	if _, ok := n.Scenario("rdr-allow"); ok {
		t.Fatal("a Media CDN topology has the reference-only rdr-allow")
	}
	if err := run([]string{"-format", "mediacdn", "-profile", "lab", "-ports", ports,
		"-client-host", "c", "-origin-host", "o", "-out", dir}, io.Discard); err == nil {
		t.Fatal("the lab profile was accepted for Media CDN")
	}
	if err := run([]string{"-format", "reference", "-client-host", "c", "-origin-host", "o", "-out", dir}, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "ports.a") {
		t.Fatalf("missing ports: %v", err)
	}
}

// -s3 adds the S3 bucket scenarios (signed origins) to the Media CDN
// output, with the secret's version, never the secret itself.
func TestMediaCDNWithS3(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envS3Secret, "test-secret-key")
	if err := run([]string{"-format", "mediacdn", "-profile", "strict", "-ports", ports + ",s3=12",
		"-s3", "media:eu-west-1:AKIDEXAMPLE:projects/p/secrets/s3/versions/1",
		"-client-host", "cdn.example.com", "-origin-host", "origins.example.net", "-out", dir}, io.Discard); err != nil {
		t.Fatal(err)
	}
	o, err := os.ReadFile(filepath.Join(dir, "origins", "bkt-s3-0.yaml"))
	if err != nil || !strings.Contains(string(o), "awsV4Authentication") || !strings.Contains(string(o), "media.s3.eu-west-1.amazonaws.com") ||
		strings.Contains(string(o), "test-secret-key") {
		t.Fatalf("bkt-s3-0.yaml: %v\n%s", err, o)
	}
	p, err := topology.ReadParams(filepath.Join(dir, topology.ParamsFile))
	if err != nil || p.S3 == nil || p.S3.Secret != "test-secret-key" {
		t.Fatalf("params %+v: %v", p, err)
	}
	t.Setenv(envS3Secret, "")
	if err := run([]string{"-format", "mediacdn", "-ports", ports, "-s3", "media:eu-west-1:AKID:projects/p/secrets/s3/versions/1",
		"-client-host", "c", "-origin-host", "o", "-out", dir}, io.Discard); err == nil {
		t.Fatal("-s3 without the secret was accepted")
	}
}

// The Media CDN import files decode strictly against Google's own field
// tree of EdgeCacheOrigin and EdgeCacheService (config.CheckAPI, from the
// Cloud SDK's schemas), and the reference reads the same files unchanged
// (config.LoadFiles: full names, one resource a file).
func TestMediaCDNFilesAreAPIResources(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envS3Secret, "test-secret-key")
	if err := run([]string{"-format", "mediacdn", "-profile", "strict", "-ports", ports + ",s3=12", "-project", "p",
		"-s3", "media:eu-west-1:AKIDEXAMPLE:projects/p/secrets/s3/versions/1",
		"-client-host", "cdn.example.com", "-origin-host", "origins.example.net", "-out", dir}, io.Discard); err != nil {
		t.Fatal(err)
	}
	origins, err := filepath.Glob(filepath.Join(dir, "origins", "*.yaml"))
	if err != nil || len(origins) == 0 {
		t.Fatalf("no origin files: %v", err)
	}
	for _, f := range append(origins, filepath.Join(dir, "service.yaml")) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		kind := "EdgeCacheOrigin"
		if filepath.Base(f) == "service.yaml" {
			kind = "EdgeCacheService"
		}
		if es := config.CheckAPI(data, kind); len(es) > 0 {
			t.Errorf("%s is not a strict %s: %v", f, kind, es)
		}
	}
	if _, err := config.LoadFiles([]string{filepath.Join(dir, "origins"), filepath.Join(dir, "service.yaml")}, config.Options{}); err != nil {
		t.Errorf("the reference does not load the Media CDN files unchanged: %v", err)
	}
}
