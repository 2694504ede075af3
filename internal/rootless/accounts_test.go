package rootless

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

const (
	testPasswd = "root:x:0:0:root:/root:/bin/bash\nmessagebus:x:100:102::/nonexistent:/usr/sbin/nologin\npostgres:x:101:104::/var/lib/postgresql:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	testGroup  = "root:x:0:\nusers:x:100:\nsystemd-journal:x:101:\nmessagebus:x:102:\nssl-cert:x:103:postgres\npostgres:x:104:\nnogroup:x:65534:\n"
)

func etcFixture(t *testing.T, loginDefs string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"passwd": testPasswd, "group": testGroup} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if loginDefs != "" {
		if err := os.WriteFile(filepath.Join(dir, "login.defs"), []byte(loginDefs), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEnsureAddsAccountsWithLowestFreeIDs(t *testing.T) {
	dir := etcFixture(t, "")
	a, err := Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantPasswd := testPasswd + "kubeadm-etcd:x:102:105:::/bin/false\nkubeadm-kas:x:103:106:::/bin/false\nkubeadm-kcm:x:104:107:::/bin/false\nkubeadm-ks:x:105:108:::/bin/false\n"
	wantGroup := testGroup + "kubeadm-etcd:x:105:kubeadm-etcd\nkubeadm-kas:x:106:kubeadm-kas\nkubeadm-kcm:x:107:kubeadm-kcm\nkubeadm-ks:x:108:kubeadm-ks\nkubeadm-sa-key-readers:x:109:kubeadm-kas,kubeadm-kcm\n"
	if got := read(t, filepath.Join(dir, "passwd")); got != wantPasswd {
		t.Errorf("passwd:\n%s\nwant:\n%s", got, wantPasswd)
	}
	if got := read(t, filepath.Join(dir, "group")); got != wantGroup {
		t.Errorf("group:\n%s\nwant:\n%s", got, wantGroup)
	}
	if ids, _ := a.For(staticpod.KubeAPIServer); ids.UID != 103 || ids.GID != 106 || len(ids.SupplementalGroups) != 1 || ids.SupplementalGroups[0] != 109 {
		t.Errorf("kube-apiserver runs as %+v", ids)
	}
	if ids, _ := a.For(staticpod.KubeScheduler); ids.UID != 105 || ids.GID != 108 || ids.SupplementalGroups != nil {
		t.Errorf("kube-scheduler runs as %+v", ids)
	}

	// Again: nothing changes, the same IDs come back.
	again, err := Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(dir, "passwd")) != wantPasswd || read(t, filepath.Join(dir, "group")) != wantGroup {
		t.Error("a second run changed the account files")
	}
	if ids, _ := again.For(staticpod.Etcd); ids.UID != 102 || ids.GID != 105 {
		t.Errorf("etcd runs as %+v the second time", ids)
	}
	if found, err := Lookup(dir); err != nil || found == nil {
		t.Errorf("Lookup after Ensure: %v, %v", found, err)
	}
}

func TestEnsureUsesLoginDefsRanges(t *testing.T) {
	dir := etcFixture(t, "# comment\nSYS_UID_MIN 500\nSYS_UID_MAX\t600\nSYS_GID_MIN 700\nSYS_GID_MAX 800\nUID_MIN 1000\n")
	if _, err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(dir, "passwd")); !strings.Contains(got, "kubeadm-etcd:x:500:700:::/bin/false\n") || !strings.Contains(got, "kubeadm-ks:x:503:703:") {
		t.Errorf("passwd:\n%s", got)
	}
	if got := read(t, filepath.Join(dir, "group")); !strings.Contains(got, "kubeadm-sa-key-readers:x:704:kubeadm-kas,kubeadm-kcm\n") {
		t.Errorf("group:\n%s", got)
	}
}

func TestEnsureFailsWhenTheRangeIsFull(t *testing.T) {
	dir := etcFixture(t, "SYS_UID_MIN 100\nSYS_UID_MAX 102\n")
	if _, err := Ensure(dir); err == nil || !strings.Contains(err.Error(), "no free ID") {
		t.Fatalf("got %v", err)
	}
	// Nothing half-written: the groups went in only if the users could.
	if strings.Contains(read(t, filepath.Join(dir, "passwd")), "kubeadm-") {
		t.Error("passwd changed")
	}
}

func TestLookupWithoutAccounts(t *testing.T) {
	a, err := Lookup(etcFixture(t, ""))
	if err != nil || a != nil {
		t.Fatalf("got %v, %v", a, err)
	}
	if _, err := Lookup(t.TempDir()); err == nil {
		t.Fatal("no passwd file must be an error")
	}
}

func TestApply(t *testing.T) {
	a, err := Ensure(etcFixture(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		component string
		escalate  bool
		add       bool
		groups    int
	}{{staticpod.Etcd, false, false, 0}, {staticpod.KubeAPIServer, true, true, 1}, {staticpod.KubeControllerManager, false, false, 1}, {staticpod.KubeScheduler, false, false, 0}} {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: c.component}}}}
		if err := a.Apply(pod, c.component); err != nil {
			t.Fatal(err)
		}
		ids, _ := a.For(c.component)
		sc := pod.Spec.SecurityContext
		if *sc.RunAsUser != ids.UID || *sc.RunAsGroup != ids.GID || len(sc.SupplementalGroups) != c.groups {
			t.Errorf("%s: pod security context %+v", c.component, sc)
		}
		csc := pod.Spec.Containers[0].SecurityContext
		if (csc.AllowPrivilegeEscalation == nil) != c.escalate || len(csc.Capabilities.Drop) != 1 || (len(csc.Capabilities.Add) == 1) != c.add {
			t.Errorf("%s: container security context %+v", c.component, csc)
		}
	}
}

func TestChown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing owners needs root")
	}
	a, err := Ensure(etcFixture(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	n := Node{CertDir: filepath.Join(root, "pki"), KubeconfigDir: root, EtcdDataDir: filepath.Join(root, "etcd"), LocalEtcd: true}
	for _, f := range []string{"pki/etcd/server.key", "pki/etcd/peer.key", "pki/sa.key", "pki/sa.pub", "pki/ca.key", "controller-manager.conf"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(n.EtcdDataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	owner := func(p string) (uint32, uint32, os.FileMode) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		return sys.Uid, sys.Gid, st.Mode().Perm()
	}
	if err := a.Chown(staticpod.Etcd, n); err != nil {
		t.Fatal(err)
	}
	if u, g, _ := owner(n.EtcdDataDir); u != 102 || g != 105 {
		t.Errorf("etcd data folder %d:%d", u, g)
	}
	if err := a.Chown(staticpod.KubeControllerManager, n); err != nil {
		t.Fatal(err)
	}
	if u, g, _ := owner(filepath.Join(root, "pki/ca.key")); u != 104 || g != 107 {
		t.Errorf("ca.key %d:%d", u, g)
	}
	if u, g, m := owner(filepath.Join(root, "pki/sa.key")); u != 0 || g != 109 || m != 0o640 {
		t.Errorf("sa.key %d:%d %v", u, g, m)
	}
	// The API server's keys are not there: the error names the file.
	if err := a.Chown(staticpod.KubeAPIServer, n); err == nil || !strings.Contains(err.Error(), "apiserver-etcd-client.key") {
		t.Errorf("got %v", err)
	}
}

func TestRemove(t *testing.T) {
	dir := etcFixture(t, "")
	if ok, err := Present(dir); err != nil || ok {
		t.Fatalf("Present before: %v, %v", ok, err)
	}
	if _, err := Ensure(dir); err != nil {
		t.Fatal(err)
	}
	if ok, err := Present(dir); err != nil || !ok {
		t.Fatalf("Present after Ensure: %v, %v", ok, err)
	}
	for range 2 {
		if err := Remove(dir); err != nil {
			t.Fatal(err)
		}
		if read(t, filepath.Join(dir, "passwd")) != testPasswd || read(t, filepath.Join(dir, "group")) != testGroup {
			t.Fatal("Remove did not restore the files")
		}
	}
	if ok, err := Present(t.TempDir()); err != nil || ok {
		t.Fatalf("Present without files: %v, %v", ok, err)
	}
}

func TestAccount(t *testing.T) {
	const comment = "made by the test"
	dir := etcFixture(t, "")
	if _, ok, err := LookupAccount(dir, "etcd"); err != nil || ok {
		t.Fatalf("LookupAccount before: %v, %v", ok, err)
	}
	ids, err := EnsureAccount(dir, "etcd", comment)
	if err != nil {
		t.Fatal(err)
	}
	if ids.UID != 102 || ids.GID != 105 {
		t.Errorf("etcd is %+v", ids)
	}
	wantPasswd := testPasswd + "etcd:x:102:105:" + comment + "::/bin/false\n"
	wantGroup := testGroup + "etcd:x:105:etcd\n"
	for range 2 { // the second run changes nothing
		if got := read(t, filepath.Join(dir, "passwd")); got != wantPasswd {
			t.Errorf("passwd:\n%s", got)
		}
		if got := read(t, filepath.Join(dir, "group")); got != wantGroup {
			t.Errorf("group:\n%s", got)
		}
		if again, err := EnsureAccount(dir, "etcd", comment); err != nil || again.UID != ids.UID || again.GID != ids.GID {
			t.Errorf("again: %+v, %v", again, err)
		}
	}
	if made, err := MadeAccount(dir, "etcd", comment); err != nil || !made {
		t.Errorf("MadeAccount: %v, %v", made, err)
	}
	for range 2 {
		if _, err := RemoveAccount(dir, "etcd", comment); err != nil {
			t.Fatal(err)
		}
		if read(t, filepath.Join(dir, "passwd")) != testPasswd || read(t, filepath.Join(dir, "group")) != testGroup {
			t.Fatal("RemoveAccount did not restore the files")
		}
	}
}

func TestAccountOfSomeoneElse(t *testing.T) {
	dir := etcFixture(t, "")
	// An etcd user the distribution made, in a group of its own name.
	passwd := testPasswd + "etcd:x:150:150:etcd user:/var/lib/etcd:/usr/sbin/nologin\n"
	group := testGroup + "etcd:x:150:\n"
	writeFiles(t, dir, passwd, group)
	ids, err := EnsureAccount(dir, "etcd", "ours")
	if err != nil || ids.UID != 150 || ids.GID != 150 {
		t.Fatalf("got %+v, %v", ids, err)
	}
	if made, err := MadeAccount(dir, "etcd", "ours"); err != nil || made {
		t.Errorf("MadeAccount: %v, %v", made, err)
	}
	if removed, err := RemoveAccount(dir, "etcd", "ours"); err != nil || removed {
		t.Errorf("RemoveAccount: %v, %v", removed, err)
	}
	if read(t, filepath.Join(dir, "passwd")) != passwd || read(t, filepath.Join(dir, "group")) != group {
		t.Error("someone else's account was changed")
	}
}

func TestAccountInExistingGroup(t *testing.T) {
	dir := etcFixture(t, "")
	group := testGroup + "etcd:x:300:\n"
	writeFiles(t, dir, testPasswd, group)
	ids, err := EnsureAccount(dir, "etcd", "ours")
	if err != nil || ids.GID != 300 {
		t.Fatalf("got %+v, %v", ids, err)
	}
	if got := read(t, filepath.Join(dir, "group")); got != group {
		t.Errorf("the group file changed:\n%s", got)
	}
}

func writeFiles(t *testing.T, dir, passwd, group string) {
	t.Helper()
	for name, content := range map[string]string{"passwd": passwd, "group": group} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
