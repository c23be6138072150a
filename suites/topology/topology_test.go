package topology

import (
	"testing"

	"github.com/edgeconform/edgeconform/reference/config"
)

func testParams(prof Profile) Params {
	p := Params{Profile: prof, ClientHost: "edge.test", OriginHost: "origin.test", AltHost: "alt.origin.test",
		RouteRewriteHost: "route.origin.test", OriginRewriteHost: "own.origin.test", Ports: map[string]int{},
		DefaultPortHost: "port.origin.test", GCSBucket: "vod"}
	for i, l := range append(Listeners(), BucketListeners()...) {
		p.Ports[l.Name] = 20000 + i
	}
	p.S3 = &S3Bucket{Bucket: "media", Region: "eu-west-1", AccessKeyID: "AKIDEXAMPLE",
		SecretVersion: "projects/p/secrets/s3/versions/1", Secret: "test"}
	return p
}

// The generated configurations validate: the lab one in lab mode, the
// strict one within Media CDN's bounds.
func TestBuildValidates(t *testing.T) {
	for _, tc := range []struct {
		prof      Profile
		reference bool
	}{{Lab, true}, {Strict, true}, {Strict, false}} {
		p := testParams(tc.prof)
		p.Reference = tc.reference
		cfg, err := Build(p)
		if err != nil {
			t.Fatal(err)
		}
		y, err := ReferenceYAML(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := config.Load(y, config.Options{Lab: tc.prof.Lab}); err != nil {
			t.Fatalf("%s reference=%v: %v\n%s", tc.prof.Name, tc.reference, err, y)
		}
		if !tc.reference {
			if _, err := MediaCDN(cfg); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestLabNeedsLabMode(t *testing.T) {
	cfg, err := Build(testParams(Lab))
	if err != nil {
		t.Fatal(err)
	}
	y, _ := ReferenceYAML(cfg)
	if _, err := config.Load(y, config.Options{}); err == nil {
		t.Fatal("lab timeouts validated in strict mode")
	}
}

func TestScenarioNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Scenarios() {
		if seen[s.Name] {
			t.Fatalf("duplicate scenario %s", s.Name)
		}
		seen[s.Name] = true
	}
}

// Every scenario is in the configuration when its requirements are met:
// S3 origins sign (also in Media CDN output), gs:// ones only for the
// reference.
func TestBucketScenarios(t *testing.T) {
	for _, reference := range []bool{true, false} {
		p := testParams(Strict)
		p.Reference = reference
		cfg, err := Build(p)
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]config.Origin{}
		for _, o := range cfg.Origins {
			names[o.Name] = o
		}
		s3 := names[OriginName("bkt-s3", 0)]
		if s3.AWSV4Authentication == nil || s3.OriginOverrideAction == nil || s3.OriginOverrideAction.URLRewrite.HostRewrite != "media.s3.eu-west-1.amazonaws.com" {
			t.Fatalf("reference=%v: bkt-s3 origin %+v", reference, s3)
		}
		if _, ok := names[OriginName("bkt-gcs", 0)]; ok != reference {
			t.Fatalf("reference=%v: bkt-gcs present=%v", reference, ok)
		}
	}
	p := testParams(Strict)
	p.S3 = nil
	cfg, err := Build(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cfg.Origins {
		if o.AWSV4Authentication != nil {
			t.Fatalf("an S3 origin without S3 parameters: %s", o.Name)
		}
	}
}
