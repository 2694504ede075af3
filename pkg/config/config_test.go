package config_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubeadm-go/kubeadm/pkg/config"
	"sigs.k8s.io/yaml"
)

// TestValidateFileOnTheCorpus: the package says of every file of the
// compatibility corpus what `kubeadm config validate` says: valid-* and
// valid-* files load, invalid-* files are invalid input.
func TestValidateFileOnTheCorpus(t *testing.T) {
	files, err := filepath.Glob("../../testdata/config/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			err := config.ValidateFile(context.Background(), f, config.Machine{})
			switch {
			case strings.HasPrefix(name, "invalid-"):
				if !errors.Is(err, config.ErrInvalid) {
					t.Fatalf("want an invalid-configuration error, got %v", err)
				}
				if !strings.Contains(err.Error(), f) {
					t.Errorf("the error does not name the file: %v", err)
				}
			case strings.HasPrefix(name, "valid-"):
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, err := config.LoadFile(context.Background(), filepath.Join(t.TempDir(), "none.yaml"), config.Machine{})
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want a not-exist error, got %v", err)
	}
}

// TestRoundTrip: every valid file of the corpus (init, join, reset and
// upgrade configurations, v1beta3 ones too) loads, its defaulted v1beta4
// documents written out load again, and what they load to is the same:
// defaulting the result of defaulting changes nothing, so a join or
// upgrade configuration round-trips as an init configuration does.
func TestRoundTrip(t *testing.T) {
	files, err := filepath.Glob("../../testdata/config/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasPrefix(name, "invalid-") || strings.HasPrefix(name, "stricter-") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			first, err := config.LoadFile(ctx, f, config.Machine{})
			if err != nil {
				t.Fatal(err)
			}
			var objs []any
			for _, o := range []any{first.Init, first.Cluster, first.Join, first.Reset, first.Upgrade, first.Kubelet, first.KubeProxy} {
				if !reflect.ValueOf(o).IsNil() {
					objs = append(objs, o)
				}
			}
			var buf bytes.Buffer
			for i, o := range objs {
				b, err := yaml.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				if i > 0 {
					buf.WriteString("---\n")
				}
				buf.Write(b)
			}
			second, err := config.Load(ctx, "written "+name, buf.Bytes(), config.Machine{})
			if err != nil {
				t.Fatalf("the written configuration does not load: %v\n%s", err, buf.String())
			}
			if diff := cmp.Diff(first, second); diff != "" {
				t.Errorf("the configuration changed on its way round (-first +second):\n%s", diff)
			}
		})
	}
}
