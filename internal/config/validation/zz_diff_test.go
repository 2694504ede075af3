package validation_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeadm-go/kubeadm/internal/config"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
)

var pathRe = regexp.MustCompile(`(?:^|\[|, |error: )([a-zA-Z][-a-zA-Z0-9.]*): (Invalid value|Required value|Unsupported value)`)

func paths(s string) []string {
	var out []string
	for _, m := range pathRe.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestDiffUpstream(t *testing.T) {
	bin := os.Getenv("UPSTREAM_KUBEADM")
	dir := os.Getenv("DIFF_CORPUS")
	if bin == "" || dir == "" {
		t.Skip("set UPSTREAM_KUBEADM and DIFF_CORPUS")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	env := config.Environment{
		Hostname:       func() (string, error) { return "vm", nil },
		DefaultAddress: func() (net.IP, error) { return net.ParseIP("192.0.2.2"), nil },
		CRISocket:      func() (string, error) { return "unix:///var/run/containerd/containerd.sock", nil },
		ResolveVersion: func(_ context.Context, v string) (string, error) { return v, nil },
		NewToken:       func() (string, error) { return "abcdef.0123456789abcdef", nil },
		Warn:           func(string, ...any) {},
	}
	for _, f := range files {
		out, _ := exec.Command(bin, "config", "validate", "--config", f).CombinedOutput()
		up := string(out)
		upOK := strings.Contains(up, "ok\n") && !strings.Contains(up, "error:")
		var errs field.ErrorList
		var loadErr error
		data, _ := os.ReadFile(f)
		docs, err := config.Decode(data, config.Strict)
		if err != nil {
			loadErr = err
		} else {
			switch {
			case docs.Init != nil || docs.Cluster != nil:
				c, err := env.InitConfiguration(context.Background(), docs, config.DefaultOptions{})
				if loadErr = err; err == nil {
					errs = validation.ValidateInitConfiguration(c)
				}
			case docs.Join != nil:
				c, err := env.JoinConfiguration(docs, config.DefaultOptions{})
				if loadErr = err; err == nil {
					errs = validation.ValidateJoinConfiguration(c)
				}
			case docs.Reset != nil:
				c, err := env.ResetConfiguration(docs, config.DefaultOptions{})
				if loadErr = err; err == nil {
					errs = validation.ValidateResetConfiguration(c)
				}
			case docs.Upgrade != nil:
				errs = validation.ValidateUpgradeConfiguration(env.UpgradeConfiguration(docs))
			}
		}
		ours := ""
		if loadErr != nil {
			ours = "LOAD: " + loadErr.Error()
		} else if agg := errs.ToAggregate(); agg != nil {
			ours = agg.Error()
		}
		ourOK := ours == ""
		up1 := strings.Join(paths(up), " ")
		our1 := strings.Join(paths(ours), " ")
		t.Logf("%s up=%v ours=%v %s", filepath.Base(f), upOK, ourOK, our1)
		if upOK != ourOK || up1 != our1 {
			t.Errorf("%s:\n upstream: %s\n ours:     %s\n upstream paths: %s\n ours paths:     %s", filepath.Base(f), strings.TrimSpace(up), ours, up1, our1)
		}
	}
}
