package upgradephases

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/preflight"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
)

// phaseNames flattens a phase tree into "parent/child" names, in order.
func phaseNames(prefix string, phases []workflow.Phase[*Data]) []string {
	var out []string
	for _, p := range phases {
		name := prefix + strings.Fields(p.Name)[0]
		out = append(out, name)
		out = append(out, phaseNames(name+"/", p.Phases)...)
	}
	return out
}

func TestPhaseNames(t *testing.T) {
	cases := []struct {
		name   string
		phases []workflow.Phase[*Data]
		want   []string
	}{
		{
			name:   "apply",
			phases: ApplyPhases(),
			want: []string{
				"preflight",
				"control-plane",
				"upload-config", "upload-config/all", "upload-config/kubeadm", "upload-config/kubelet",
				"kubelet-config",
				"bootstrap-token",
				"addon", "addon/all", "addon/coredns", "addon/kube-proxy",
				"post-upgrade",
			},
		},
		{
			name:   "node",
			phases: NodePhases(),
			want: []string{
				"preflight",
				"control-plane",
				"kubelet-config",
				"addon", "addon/all", "addon/coredns", "addon/kube-proxy",
				"post-upgrade",
			},
		},
	}
	for _, tc := range cases {
		got := phaseNames("", tc.phases)
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s phases:\n got  %v\n want %v", tc.name, got, tc.want)
		}
		for _, p := range tc.phases {
			if p.Short == "" {
				t.Errorf("%s phase %s has no description", tc.name, p.Name)
			}
			if p.Run == nil && len(p.Phases) == 0 {
				t.Errorf("%s phase %s does nothing", tc.name, p.Name)
			}
		}
	}
}

// countingReader counts the reads of its reader.
type countingReader struct {
	r     io.Reader
	reads int
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.reads++
	return c.r.Read(p)
}

func TestConfirm(t *testing.T) {
	yes, no := func() bool { return true }, func() bool { return false }
	cases := []struct {
		name                 string
		yes, force, dryRun   bool
		terminal             func() bool
		input                string
		wantErr              string // "" for no error
		wantPrompt, wantRead bool
	}{
		{name: "no terminal", terminal: no, input: "y\n", wantErr: "--yes"},
		{name: "no terminal check", input: "y\n", wantErr: "--yes"},
		{name: "answer n", terminal: yes, input: "n\n", wantErr: "aborted", wantPrompt: true, wantRead: true},
		{name: "empty answer", terminal: yes, input: "\n", wantErr: "aborted", wantPrompt: true, wantRead: true},
		{name: "end of input", terminal: yes, input: "", wantErr: "aborted", wantPrompt: true, wantRead: true},
		{name: "answer y", terminal: yes, input: "y\n", wantPrompt: true, wantRead: true},
		{name: "answer YES without a newline", terminal: yes, input: " YES ", wantPrompt: true, wantRead: true},
		{name: "--yes", yes: true, terminal: no, input: "n\n"},
		{name: "--force", force: true, terminal: yes, input: "n\n"},
		{name: "--dry-run", dryRun: true, terminal: yes, input: "n\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &countingReader{r: strings.NewReader(tc.input)}
			var out bytes.Buffer
			d := &Data{
				Cfg:        &kubeadm.InitConfiguration{ClusterConfiguration: kubeadm.ClusterConfiguration{KubernetesVersion: "v1.36.3"}},
				Yes:        tc.yes,
				Force:      tc.force,
				DryRun:     tc.dryRun,
				IsTerminal: tc.terminal,
				In:         in,
				Out:        &out,
			}
			err := confirm(d)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("confirm = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("confirm = %v, want an error mentioning %q", err, tc.wantErr)
			}
			if got := in.reads > 0; got != tc.wantRead {
				t.Errorf("input read %d times, want reads: %v", in.reads, tc.wantRead)
			}
			prompted := strings.Contains(out.String(), "v1.36.3? [y/N]")
			if prompted != tc.wantPrompt {
				t.Errorf("prompted: %v, want %v (output %q)", prompted, tc.wantPrompt, out.String())
			}
		})
	}
}

// brokenKubeletHost is a root host whose kubelet cannot tell its version;
// nothing else of it may be used.
type brokenKubeletHost struct{ preflight.Host }

func (brokenKubeletHost) EffectiveUID() int { return 0 }
func (brokenKubeletHost) Command(context.Context, string, ...string) ([]byte, error) {
	return nil, errors.New("no kubelet here")
}

// TestNodeChecksRunSystemVerification: apply and node run the system
// verification as upstream does, under its name, so that it fails the
// upgrade unless ignored.
func TestNodeChecksRunSystemVerification(t *testing.T) {
	var out bytes.Buffer
	d := &Data{Host: brokenKubeletHost{}, Out: &out, IgnorePreflightErrors: sets.New[string]()}
	err := runNodeChecks(context.Background(), d)
	if err == nil || !strings.Contains(err.Error(), "[ERROR SystemVerification]") || !strings.Contains(err.Error(), "no kubelet here") {
		t.Fatalf("runNodeChecks with a broken kubelet = %v", err)
	}
	out.Reset()
	d.IgnorePreflightErrors = sets.New("SystemVerification")
	if err := runNodeChecks(context.Background(), d); err != nil {
		t.Fatalf("with SystemVerification ignored: %v", err)
	}
	if !strings.Contains(out.String(), "[WARNING SystemVerification]") {
		t.Errorf("the ignored failure was not printed as a warning:\n%s", out.String())
	}
}
