package initphases

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kubeadm-go/kubeadm/internal/kubelet/kubelettest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/apilb"
	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
)

// kubeletFinalizeData returns data whose kubelet.conf embeds a client
// certificate, as kubeadm writes it before the TLS bootstrap.
func kubeletFinalizeData(t *testing.T) (*Data, *bytes.Buffer) {
	t.Helper()
	root := t.TempDir()
	d := &Data{
		KubeconfigDir: filepath.Join(root, "etc", "kubernetes"),
		KubeletDir:    filepath.Join(root, "var", "lib", "kubelet"),
	}
	out := &bytes.Buffer{}
	d.Out = out
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubernetes"] = &clientcmdapi.Cluster{Server: "https://10.0.0.5:6443", CertificateAuthorityData: []byte("CA")}
	cfg.AuthInfos["system:node:node1"] = &clientcmdapi.AuthInfo{ClientCertificateData: []byte("CERT"), ClientKeyData: []byte("KEY")}
	cfg.Contexts["system:node:node1@kubernetes"] = &clientcmdapi.Context{Cluster: "kubernetes", AuthInfo: "system:node:node1"}
	cfg.CurrentContext = "system:node:node1@kubernetes"
	if err := os.MkdirAll(d.KubeconfigDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*cfg, filepath.Join(d.KubeconfigDir, "kubelet.conf")); err != nil {
		t.Fatal(err)
	}
	return d, out
}

func writePEM(t *testing.T, d *Data) string {
	t.Helper()
	pem := filepath.Join(d.KubeletDir, "pki", "kubelet-client-current.pem")
	if err := os.MkdirAll(filepath.Dir(pem), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pem, []byte("cert and key"), 0o600); err != nil {
		t.Fatal(err)
	}
	return pem
}

// finalize runs enableClientCertRotation on d with host and waits for the
// kubelet restart it may have started, its messages going to out.
func finalize(t *testing.T, d *Data, host *kubelettest.SystemdHost, out *bytes.Buffer) {
	t.Helper()
	restart := &backgroundRestart{}
	if err := enableClientCertRotation(context.Background(), d, host, restart); err != nil {
		t.Fatal(err)
	}
	restart.wait(out)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEnableClientCertRotation(t *testing.T) {
	ctx := context.Background()
	t.Run("before the TLS bootstrap nothing changes", func(t *testing.T) {
		d, out := kubeletFinalizeData(t)
		conf := filepath.Join(d.KubeconfigDir, "kubelet.conf")
		before := readFile(t, conf)
		host := &kubelettest.SystemdHost{}
		finalize(t, d, host, out)
		if !bytes.Equal(readFile(t, conf), before) || out.Len() != 0 || len(host.Calls) != 0 {
			t.Errorf("changed something: output %q, commands %q", out, host.Calls)
		}
	})

	t.Run("after it kubelet.conf names the rotating file", func(t *testing.T) {
		d, out := kubeletFinalizeData(t)
		pem := writePEM(t, d)
		conf := filepath.Join(d.KubeconfigDir, "kubelet.conf")
		host := &kubelettest.SystemdHost{}
		finalize(t, d, host, out)
		cfg, err := clientcmd.LoadFromFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		user := cfg.AuthInfos["system:node:node1"]
		if user.ClientCertificate != pem || user.ClientKey != pem || len(user.ClientCertificateData) != 0 || len(user.ClientKeyData) != 0 {
			t.Errorf("user %+v, want both files %s and no embedded data", user, pem)
		}
		if c := cfg.Clusters["kubernetes"]; c.Server != "https://10.0.0.5:6443" || string(c.CertificateAuthorityData) != "CA" {
			t.Errorf("cluster changed: %+v", c)
		}
		if fi, _ := os.Stat(conf); fi.Mode().Perm() != 0o600 {
			t.Errorf("kubelet.conf mode %v, want 0600", fi.Mode().Perm())
		}
		wantOut := "[kubelet-finalize] Pointing \"" + conf + "\" at the client certificate and key the kubelet renews\n"
		if out.String() != wantOut {
			t.Errorf("output %q, want only %q (the restart is silent when it works, as upstream's)", out, wantOut)
		}
		if want := []string{"systemctl status kubelet", "systemctl daemon-reload", "systemctl restart kubelet"}; !reflect.DeepEqual(host.Calls, want) {
			t.Errorf("commands %q, want %q", host.Calls, want)
		}

		// Again: already done, nothing written or restarted.
		after := readFile(t, conf)
		out.Reset()
		finalize(t, d, host, out)
		if !bytes.Equal(readFile(t, conf), after) || out.Len() != 0 || len(host.Calls) != 3 {
			t.Errorf("second run changed something: output %q, commands %q", out, host.Calls)
		}
	})

	t.Run("dry run does not restart the kubelet", func(t *testing.T) {
		d, out := kubeletFinalizeData(t)
		d.DryRun = true
		writePEM(t, d)
		host := &kubelettest.SystemdHost{}
		finalize(t, d, host, out)
		if len(host.Calls) != 0 {
			t.Errorf("commands %q under --dry-run", host.Calls)
		}
	})

	t.Run("with NodeLocalAPILoadBalancer kubelet.conf also names the balancer", func(t *testing.T) {
		for _, rotated := range []bool{true, false} {
			d, out := kubeletFinalizeData(t)
			d.Cfg = &kubeadm.InitConfiguration{}
			d.Cfg.FeatureGates = map[string]bool{apilb.FeatureGate: true}
			if rotated {
				writePEM(t, d)
			}
			conf := filepath.Join(d.KubeconfigDir, "kubelet.conf")
			host := &kubelettest.SystemdHost{}
			finalize(t, d, host, out)
			cfg, err := clientcmd.LoadFromFile(conf)
			if err != nil {
				t.Fatal(err)
			}
			if c := cfg.Clusters["kubernetes"]; c.Server != apilb.URL || c.TLSServerName != apilb.ServerName || string(c.CertificateAuthorityData) != "CA" {
				t.Errorf("rotated=%v: cluster %+v, want the balancer %s checked as %q", rotated, c, apilb.URL, apilb.ServerName)
			}
			if user := cfg.AuthInfos["system:node:node1"]; rotated == (len(user.ClientCertificateData) != 0) {
				t.Errorf("rotated=%v: user %+v", rotated, user)
			}
			if !strings.Contains(out.String(), "at the node-local API server load balancer "+apilb.URL) || len(host.Calls) != 3 {
				t.Errorf("rotated=%v: output %q, commands %q", rotated, out, host.Calls)
			}
			// Again: nothing to do, no restart.
			out.Reset()
			finalize(t, d, host, out)
			if out.Len() != 0 || len(host.Calls) != 3 {
				t.Errorf("rotated=%v: second run: output %q, commands %q", rotated, out, host.Calls)
			}
		}
	})

	t.Run("a missing kubelet.conf is an error", func(t *testing.T) {
		d, _ := kubeletFinalizeData(t)
		writePEM(t, d)
		conf := filepath.Join(d.KubeconfigDir, "kubelet.conf")
		if err := os.Remove(conf); err != nil {
			t.Fatal(err)
		}
		if err := enableClientCertRotation(ctx, d, &kubelettest.SystemdHost{}, &backgroundRestart{}); err == nil || !strings.Contains(err.Error(), conf) {
			t.Errorf("error %v, want one naming %s", err, conf)
		}
	})
}

// slowRestartHost is a systemd machine whose "systemctl restart" waits for
// release and then fails.
type slowRestartHost struct {
	kubelettest.SystemdHost
	release chan struct{}
}

func (h *slowRestartHost) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	if _, err := h.SystemdHost.Run(ctx, name, args...); err != nil {
		return nil, err
	}
	if name == "systemctl" && args[0] == "restart" {
		<-h.release
		return []byte("Job for kubelet.service failed.\n"), exitErr(1)
	}
	return nil, nil
}

type exitErr int

func (e exitErr) Error() string { return fmt.Sprintf("exit status %d", int(e)) }
func (e exitErr) ExitCode() int { return int(e) }

// The phase does not wait for the kubelet's restart; its Finish does, and
// prints what went wrong with it.
func TestKubeletFinalizeRestartsInTheBackground(t *testing.T) {
	d, out := kubeletFinalizeData(t)
	writePEM(t, d)
	host := &slowRestartHost{release: make(chan struct{})}
	phase := kubeletFinalizePhase(host).Phases[1]
	ran := make(chan error, 1)
	go func() { ran <- phase.Run(context.Background(), d) }()
	select {
	case err := <-ran:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		close(host.release)
		t.Fatal("the phase waited for the kubelet's restart")
	}
	if strings.Contains(out.String(), "WARNING") {
		t.Fatalf("output before the restart ended: %q", out)
	}
	close(host.release)
	phase.Finish(context.Background(), d, nil)
	if want := "[kubelet-start] WARNING: unable to restart the kubelet service: systemctl restart kubelet: exit status 1: Job for kubelet.service failed.\n"; !strings.Contains(out.String(), want) {
		t.Errorf("output %q, want the restart's failure %q", out, want)
	}
	if want := []string{"systemctl status kubelet", "systemctl daemon-reload", "systemctl restart kubelet"}; !reflect.DeepEqual(host.Calls, want) {
		t.Errorf("commands %q, want %q", host.Calls, want)
	}
	// A second Finish (nothing pending) prints nothing more.
	n := out.Len()
	phase.Finish(context.Background(), d, nil)
	if out.Len() != n {
		t.Errorf("second Finish printed %q", out.String()[n:])
	}
}
