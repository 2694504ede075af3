package staticpod

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadEtcdMemberOfGoldenManifest(t *testing.T) {
	m, err := ReadEtcdMember(filepath.Join("testdata", "default"))
	if err != nil {
		t.Fatal(err)
	}
	want := &EtcdMember{
		Name:        "node1",
		ClientURLs:  []string{"https://10.0.0.5:2379"},
		PeerURLs:    []string{"https://10.0.0.5:2380"},
		DataDir:     "/var/lib/etcd",
		HostDataDir: "/var/lib/etcd",
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("ReadEtcdMember = %+v, want %+v", m, want)
	}
}

func TestReadEtcdMember(t *testing.T) {
	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: etcd
spec:
  containers:
  - name: etcd
    command:
    - etcd
    - --name=first
    - --advertise-client-urls=https://10.0.0.1:2379, https://[fd00::1]:2379
    - --initial-advertise-peer-urls=https://10.0.0.1:2380
    - --data-dir=/data/etcd/member-data
    - --initial-cluster-token=tok
    - --listen-client-urls
    args:
    - --name=second
    volumeMounts:
    - name: data
      mountPath: /data
    - name: etcd
      mountPath: /data/etcd
    - name: other
      mountPath: /data/et
  volumes:
  - name: data
    hostPath:
      path: /srv
  - name: etcd
    hostPath:
      path: /mnt/disk/etcd
  - name: other
    hostPath:
      path: /nowhere
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "etcd.yaml"), []byte(pod), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := ReadEtcdMember(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := &EtcdMember{
		Name:                "second",
		ClientURLs:          []string{"https://10.0.0.1:2379", "https://[fd00::1]:2379"},
		PeerURLs:            []string{"https://10.0.0.1:2380"},
		DataDir:             "/data/etcd/member-data",
		HostDataDir:         "/mnt/disk/etcd/member-data",
		InitialClusterToken: "tok",
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("ReadEtcdMember = %+v, want %+v", m, want)
	}
}

func TestReadEtcdMemberErrors(t *testing.T) {
	if _, err := ReadEtcdMember(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing manifest: %v, want fs.ErrNotExist", err)
	}
	for name, content := range map[string]string{
		"not yaml":     "spec: [",
		"no container": "apiVersion: v1\nkind: Pod\nspec: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "etcd.yaml"), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ReadEtcdMember(dir)
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "etcd.yaml")) {
				t.Errorf("ReadEtcdMember = %v, want an error naming the etcd manifest", err)
			}
		})
	}
}

func TestReadEtcdMemberUnmountedDataDir(t *testing.T) {
	dir := t.TempDir()
	pod := "apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: etcd\n    command: [etcd, --data-dir=/var/lib/etcd]\n"
	if err := os.WriteFile(filepath.Join(dir, "etcd.yaml"), []byte(pod), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := ReadEtcdMember(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m.DataDir != "/var/lib/etcd" || m.HostDataDir != "" {
		t.Errorf("data folder %q on the node %q; want /var/lib/etcd, none on the node", m.DataDir, m.HostDataDir)
	}
}
