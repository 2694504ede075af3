package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/config/configtest"
	"github.com/kubeadm-go/kubeadm/internal/cri/critest"
)

// listedImages is what "config images list" prints for the version the
// pull tests use.
func listedImages(t *testing.T, args ...string) []string {
	t.Helper()
	out, errOut, code := run(t, append([]string{"config", "images", "list", "--kubernetes-version", "v1.36.3"}, args...)...)
	if code != 0 {
		t.Fatalf("config images list: code %d: %s", code, errOut)
	}
	return strings.Fields(out)
}

// pullConfig writes a configuration for "config images pull --config" with
// the given nodeRegistration lines.
func pullConfig(t *testing.T, socket string, nodeRegistration ...string) string {
	t.Helper()
	var nr strings.Builder
	for _, l := range append([]string{"criSocket: " + socket, "name: node1"}, nodeRegistration...) {
		nr.WriteString("  " + l + "\n")
	}
	doc := fmt.Sprintf(`apiVersion: kubeadm.k8s.io/v1beta4
kind: InitConfiguration
nodeRegistration:
%s---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
kubernetesVersion: v1.36.3
`, nr.String())
	path := filepath.Join(t.TempDir(), "kubeadm.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// pulledLines are the lines a pull of images prints, prefixed.
func pullLines(verb string, images []string) []string {
	var out []string
	for _, img := range images {
		out = append(out, "[config/images] "+verb+img)
	}
	return out
}

func lines(s string) []string {
	return strings.Split(strings.TrimRight(s, "\n"), "\n")
}

func TestConfigImagesPullFromFlags(t *testing.T) {
	want := listedImages(t)
	if len(want) < 5 {
		t.Fatalf("config images list printed only %q", want)
	}
	// Without a policy every image is pulled, present or not, one after
	// the other in the list's order.
	srv := &critest.Server{Present: want[:2]}
	endpoint := critest.Start(t, srv)
	out, errOut, code := run(t, "config", "images", "pull", "--kubernetes-version", "v1.36.3", "--cri-socket", endpoint)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	if got := lines(out); !reflect.DeepEqual(got, pullLines("Pulled ", want)) {
		t.Errorf("output:\n%s\nwant one Pulled line per image of %q", out, want)
	}
	if got := srv.Pulls(); !reflect.DeepEqual(got, want) {
		t.Errorf("pulls = %q, want %q", got, want)
	}
	if m := srv.MaxInFlight(); m != 1 {
		t.Errorf("%d pulls at once by default, want 1", m)
	}

	// The repository flag changes the images as it changes the list.
	mirrored := listedImages(t, "--image-repository", "mirror.example/k8s")
	srv = &critest.Server{}
	_, errOut, code = run(t, "config", "images", "pull", "--kubernetes-version", "v1.36.3",
		"--image-repository", "mirror.example/k8s", "--cri-socket", critest.Start(t, srv))
	if code != 0 || !reflect.DeepEqual(srv.Pulls(), mirrored) {
		t.Errorf("mirror: code %d, pulls %q, want %q (%s)", code, srv.Pulls(), mirrored, errOut)
	}
}

func TestConfigImagesPullPolicies(t *testing.T) {
	all := listedImages(t)
	present, missing := all[:3], all[3:]
	tests := []struct {
		name      string
		policy    string
		present   []string
		wantPulls []string
		wantOut   []string
		wantErr   []string
	}{
		{
			name: "Always pulls present images too", policy: "Always", present: present,
			wantPulls: all, wantOut: pullLines("Pulled ", all),
		},
		{
			name: "IfNotPresent pulls only the missing ones", policy: "IfNotPresent", present: present,
			wantPulls: missing, wantOut: append(pullLines("Already present: ", present), pullLines("Pulled ", missing)...),
		},
		{
			name: "Never with every image present", policy: "Never", present: all,
			wantOut: pullLines("Already present: ", all),
		},
		{
			name: "Never with missing images fails and names them", policy: "Never", present: present,
			wantOut: pullLines("Already present: ", present),
			wantErr: append([]string{fmt.Sprintf("%d of %d images could not be pulled by the container runtime at unix://", len(missing), len(all))}, missing...),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &critest.Server{Present: tt.present}
			endpoint := critest.Start(t, srv)
			out, errOut, code := run(t, "config", "images", "pull", "--config", pullConfig(t, endpoint, "imagePullPolicy: "+tt.policy))
			if (code != 0) != (tt.wantErr != nil) {
				t.Fatalf("code %d, stderr:\n%s", code, errOut)
			}
			if tt.wantErr != nil {
				for _, w := range append([]string{endpoint}, tt.wantErr...) {
					if !strings.Contains(errOut, w) {
						t.Errorf("stderr lacks %q:\n%s", w, errOut)
					}
				}
			}
			if got := lines(out); !reflect.DeepEqual(got, tt.wantOut) {
				t.Errorf("output:\n%s\nwant:\n%s", out, strings.Join(tt.wantOut, "\n"))
			}
			if got := srv.Pulls(); !reflect.DeepEqual(got, tt.wantPulls) && len(got)+len(tt.wantPulls) > 0 {
				t.Errorf("pulls = %q, want %q", got, tt.wantPulls)
			}
		})
	}
}

func TestConfigImagesPullParallel(t *testing.T) {
	all := listedImages(t)
	// Every pull waits until three have started: the command only succeeds
	// if its pulls really overlap.
	srv := &critest.Server{HoldPulls: 3}
	endpoint := critest.Start(t, srv)
	out, errOut, code := run(t, "config", "images", "pull", "--config", pullConfig(t, endpoint, "imagePullPolicy: Always", "imagePullSerial: false"))
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	if m := srv.MaxInFlight(); m < 3 || m > 4 {
		t.Errorf("%d pulls at once, want between 3 and the bound of 4", m)
	}
	got, want := lines(out), pullLines("Pulled ", all)
	slices.Sort(got)
	slices.Sort(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("output:\n%s\nwant a Pulled line for each of %q", out, all)
	}
}

func TestConfigImagesPullFailure(t *testing.T) {
	all := listedImages(t)
	broken := all[len(all)-1]
	for _, serial := range []string{"true", "false"} {
		t.Run("serial="+serial, func(t *testing.T) {
			srv := &critest.Server{PullErrors: map[string]error{broken: status.Error(codes.NotFound, "manifest unknown")}}
			endpoint := critest.Start(t, srv)
			out, errOut, code := run(t, "config", "images", "pull", "--config", pullConfig(t, endpoint, "imagePullSerial: "+serial))
			if code != 1 {
				t.Fatalf("code %d, want 1; stderr:\n%s", code, errOut)
			}
			for _, w := range []string{
				fmt.Sprintf("error: 1 of %d images could not be pulled by the container runtime at %s:", len(all), endpoint),
				"failed to pull image " + broken + ": rpc error: code = NotFound desc = manifest unknown",
			} {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			for _, img := range all {
				if img != broken && !srv.Has(img) {
					t.Errorf("%s was not pulled after %s failed", img, broken)
				}
				if pulled := strings.Contains(out, "Pulled "+img+"\n"); pulled == (img == broken) {
					t.Errorf("output for %s wrong:\n%s", img, out)
				}
			}
		})
	}
}

func TestConfigImagesPullNoRuntime(t *testing.T) {
	missing := "unix://" + filepath.Join(t.TempDir(), "containerd.sock")
	for name, endpoint := range map[string]string{"no socket": missing, "nobody listening": critest.Stale(t)} {
		t.Run(name, func(t *testing.T) {
			out, errOut, code := run(t, "config", "images", "pull", "--kubernetes-version", "v1.36.3", "--cri-socket", endpoint)
			want := fmt.Sprintf("error: could not reach the container runtime: the CRI v1 runtime API at %q does not answer", endpoint)
			if code != 1 || !strings.HasPrefix(errOut, want) || out != "" {
				t.Errorf("code %d, stdout %q, stderr:\n%s\nwant it to start with %q", code, out, errOut, want)
			}
		})
	}
}

func TestConfigImagesPullRefusesBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--feature-gates", "NoSuchGate"},
		{"--feature-gates", "NoSuchGate=true"},
	} {
		_, errOut, code := run(t, append([]string{"config", "images", "pull", "--kubernetes-version", "v1.36.3"}, args...)...)
		if code != 3 {
			t.Errorf("%q: code %d, want 3 (validation); stderr:\n%s", args, code, errOut)
		}
	}
}

// The socket is found as "init" finds it: the flag or the file, else the
// machine's runtime socket.
func TestConfigImagesPullPlan(t *testing.T) {
	detected := "unix:///run/containerd/containerd.sock"
	file := func(lines ...string) string {
		path := filepath.Join(t.TempDir(), "kubeadm.yaml")
		doc := "apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  name: node1\n"
		for _, l := range lines {
			doc += "  " + l + "\n"
		}
		doc += "---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.36.3\n"
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name       string
		opts       imagesPullOptions
		changed    []string
		wantSocket string
		wantPolicy corev1.PullPolicy
		wantSerial bool
		wantWarn   string
	}{
		{name: "flags, socket detected", wantSocket: detected, wantPolicy: corev1.PullAlways, wantSerial: true},
		{name: "flags, socket given as a path", opts: imagesPullOptions{criSocket: "/run/crio/crio.sock"},
			wantSocket: "unix:///run/crio/crio.sock", wantPolicy: corev1.PullAlways, wantSerial: true,
			wantWarn: "has no unix:// scheme"},
		{name: "file without socket or policy", opts: imagesPullOptions{configPath: file()},
			wantSocket: detected, wantPolicy: corev1.PullAlways, wantSerial: true},
		{name: "file with everything", opts: imagesPullOptions{configPath: file("criSocket: unix:///run/crio/crio.sock", "imagePullPolicy: IfNotPresent", "imagePullSerial: false")},
			wantSocket: "unix:///run/crio/crio.sock", wantPolicy: corev1.PullIfNotPresent, wantSerial: false},
		{name: "the file wins over the flag", opts: imagesPullOptions{configPath: file(), criSocket: "unix:///elsewhere.sock"}, changed: []string{"cri-socket"},
			wantSocket: detected, wantPolicy: corev1.PullAlways, wantSerial: true, wantWarn: "ignoring --cri-socket: with --config the file decides"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.Environment("")
			var warnings []string
			env.Warn = func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
			o := tt.opts
			if o.kubernetesVersion == "" {
				o.kubernetesVersion = "v1.36.3"
			}
			o.imageRepository = "registry.k8s.io"
			fs := pflag.NewFlagSet("pull", pflag.ContinueOnError)
			for _, name := range tt.changed {
				fs.String(name, "", "")
				if err := fs.Set(name, "x"); err != nil {
					t.Fatal(err)
				}
			}
			p, err := o.plan(context.Background(), env, fs)
			if err != nil {
				t.Fatal(err)
			}
			if p.socket != tt.wantSocket || p.policy != tt.wantPolicy || p.serial != tt.wantSerial {
				t.Errorf("plan = socket %q, policy %q, serial %v; want %q, %q, %v", p.socket, p.policy, p.serial, tt.wantSocket, tt.wantPolicy, tt.wantSerial)
			}
			if len(p.images) < 5 || p.images[0] != "registry.k8s.io/kube-apiserver:v1.36.3" {
				t.Errorf("images = %q", p.images)
			}
			if got := strings.Join(warnings, "\n"); (tt.wantWarn == "") != (got == "") || !strings.Contains(got, tt.wantWarn) {
				t.Errorf("warnings %q, want %q", got, tt.wantWarn)
			}
		})
	}
}
