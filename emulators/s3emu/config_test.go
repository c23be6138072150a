package s3emu

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/edgeconform/edgeconform/internal/fielderr"
)

func TestConfigErrors(t *testing.T) {
	_, err := New(Config{
		Region:      "EU West",
		Credentials: map[string]string{"AK/ID": "s", "OK": ""},
		Buckets: []BucketConfig{
			{Name: "Bad_Name"},
			{Name: "dup"},
			{Name: "good", Objects: []ObjectConfig{{Key: ""}, {Key: "k", Size: -1}, {Key: "k", Body: "x", Size: 3}}},
			{Name: "good"},
		},
		MaxSkew: -1,
	})
	es, ok := fielderr.As(err)
	if !ok {
		t.Fatalf("not field errors: %v", err)
	}
	var fields []string
	for _, e := range es {
		fields = append(fields, e.Field)
	}
	got := strings.Join(fields, " ")
	for _, want := range []string{"region", `credentials["AK/ID"]`, `credentials["OK"]`, "maxSkew", "buckets[0].name", "buckets[2].objects[0].key",
		"buckets[2].objects[1].size", "buckets[2].objects[2].key", "buckets[2].objects[2]", "buckets[3].name"} {
		if !strings.Contains(" "+got+" ", " "+want+" ") {
			t.Errorf("no error for %s in %v", want, err)
		}
	}
	if _, err := New(Config{}); err != nil {
		t.Fatalf("zero config: %v", err)
	}
}

// Virtual-hosted requests (BUCKET.<HostSuffix>) reach the bucket, and
// objects persist under Dir across servers.
func TestVirtualHostAndDir(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, Buckets: []BucketConfig{{Name: "vbucket"}}}
	_, _, base := startS3(t, cfg)
	ctx := context.Background()
	c := sdkClient(base)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("vbucket"), Key: aws.String("p/q.txt"), Body: strings.NewReader("persisted"), CacheControl: aws.String("no-cache")}); err != nil {
		t.Fatal(err)
	}
	_, _, base2 := startS3(t, cfg)
	for _, host := range []string{"vbucket.s3." + testRegion + ".example", "vbucket.s3." + testRegion + ".amazonaws.com:8443"} {
		spec := defaultSpec()
		spec.at = time.Now()
		req := signedReq(t, "GET", base2+"/p/q.txt", nil, spec, func(r *http.Request) { r.Host = host })
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "persisted" || resp.Header.Get("Cache-Control") != "no-cache" {
			t.Fatalf("virtual-hosted GET via %s: %d %s", host, resp.StatusCode, body)
		}
	}
	if _, err := sdkClient(base2).DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("vbucket"), Key: aws.String("p/q.txt")}); err != nil {
		t.Fatal(err)
	}
	srv3, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := srv3.store.get("vbucket", "p/q.txt"); o != nil {
		t.Fatal("deleted object still persisted")
	}
}
