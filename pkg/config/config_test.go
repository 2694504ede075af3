package config_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/pkg/config"
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
