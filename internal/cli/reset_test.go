package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"k8s.io/client-go/kubernetes"
)

// TestResetCertDir: reset empties the certificate folder the flag or its
// file names (a file's defaulted one included), else the one of the
// cluster's configuration (upstream's reads it but keeps the default),
// else the default.
func TestResetCertDir(t *testing.T) {
	dir := t.TempDir()
	env := certsTestEnv(dir)
	cluster := certsTestCluster(t, env, certsTestConfig(t, dir, ""), "/etc/kubernetes/custom-pki")
	resetFile := filepath.Join(dir, "reset.yaml")
	plainFile := filepath.Join(dir, "plain-reset.yaml")
	for path, extra := range map[string]string{resetFile: "certificatesDir: /from/file\n", plainFile: "force: true\n"} {
		if err := os.WriteFile(path, []byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ResetConfiguration\n"+extra), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		args    []string
		reach   bool
		want    string
		wantOut string
	}{
		{name: "the cluster's folder", reach: true, want: "/etc/kubernetes/custom-pki", wantOut: "[reset] Reading the cluster's configuration"},
		{name: "no cluster: the default", want: "/etc/kubernetes/pki"},
		{name: "the flag wins", args: []string{"--cert-dir", "/from/flag"}, reach: true, want: "/from/flag"},
		{name: "the file wins", args: []string{"--config", resetFile}, reach: true, want: "/from/file"},
		{name: "a file without the folder: its default", args: []string{"--config", plainFile}, reach: true, want: "/etc/kubernetes/pki"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			o := &resetOptions{}
			o.clusterClient = func(string) (kubernetes.Interface, error) {
				if !tc.reach {
					return nil, fmt.Errorf("no kubeconfig")
				}
				return cluster, nil
			}
			// The flags data reads, bound to o.
			fs := pflag.NewFlagSet("reset", pflag.ContinueOnError)
			fs.StringVar(&o.configPath, "config", "", "")
			fs.StringVar(&o.certDir, "cert-dir", "/etc/kubernetes/pki", "")
			fs.StringVar(&o.kubeconfigPath, "kubeconfig", "/etc/kubernetes/admin.conf", "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			d, err := o.data(context.Background(), fs, Streams{In: strings.NewReader(""), Out: &out, Err: &out})
			if err != nil {
				t.Fatal(err)
			}
			if d.CertDir != tc.want {
				t.Errorf("certificate folder %q, want %q\n%s", d.CertDir, tc.want, out.String())
			}
			if tc.wantOut != "" && !strings.Contains(out.String(), tc.wantOut) {
				t.Errorf("output lacks %q:\n%s", tc.wantOut, out.String())
			}
		})
	}
}

func TestAskYes(t *testing.T) {
	cases := []struct {
		name string
		in   io.Reader
		want bool
	}{
		{"y", strings.NewReader("y\n"), true},
		{"YES without a newline", strings.NewReader(" YES "), true},
		{"n", strings.NewReader("n\n"), false},
		{"empty line", strings.NewReader("\n"), false},
		{"end of input", strings.NewReader(""), false},
		{"yes on the second line only", strings.NewReader("\ny\n"), false},
		{"no input at all", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			got := askYes(Streams{In: tc.in, Out: &out})("Go on? [y/N]: ")
			if got != tc.want {
				t.Errorf("askYes = %v, want %v", got, tc.want)
			}
			if out.String() != "Go on? [y/N]: " {
				t.Errorf("printed %q, want the question", out.String())
			}
		})
	}
}

// TestAskYesReadsALineOfBoundedLength: an answer that does not end (input
// from an endless stream) is not read to its end, and is not a yes.
func TestAskYesReadsALineOfBoundedLength(t *testing.T) {
	in := &countingInput{r: strings.NewReader(strings.Repeat("y", 1<<20) + "\n")}
	if askYes(Streams{In: in, Out: io.Discard})("Go on? [y/N]: ") {
		t.Error("a line of a million y is a yes")
	}
	if in.n > 4<<10 {
		t.Errorf("read %d bytes of the answer, want a few KiB at most", in.n)
	}
}

// countingInput counts the bytes read from r.
type countingInput struct {
	r io.Reader
	n int
}

func (c *countingInput) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
