package etcd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubeadm-go/kubeadm/internal/etcd/etcdtest"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// TestRestoreMatchesEtcdutl restores the fixture with Restore and with
// etcdutl's snapshot restore called as `etcdutl snapshot restore --name
// … --initial-cluster … --initial-advertise-peer-urls …
// --initial-cluster-token …` calls it, and compares what a member reads
// from the two data folders: every bucket of the database, the
// write-ahead log (metadata, hard state, entries, snapshots) and the raft
// snapshot. Restore runs the same library; this checks that it gives it
// the member's name, peer URLs and token as etcdutl's flags would, so the
// member and cluster IDs are those a member started from the manifest
// expects.
func TestRestoreMatchesEtcdutl(t *testing.T) {
	for _, tc := range []struct {
		name  string
		token string
		urls  []string
	}{
		{"one peer URL, default token", "", []string{"https://10.0.0.1:2380"}},
		{"two peer URLs, own token", "tok-1", []string{"https://10.0.0.1:2380", "https://[fd00::1]:2380"}},
		{"a token JSON escapes", "t<&>", []string{"http://etcd.example:2380"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := restoreOptions(filepath.Join(t.TempDir(), "ours"))
			o.PeerURLs, o.InitialClusterToken = tc.urls, tc.token
			if err := Restore(t.Context(), o); err != nil {
				t.Fatal(err)
			}
			ref := filepath.Join(t.TempDir(), "etcdutl")
			token := tc.token
			if token == "" {
				token = DefaultInitialClusterToken
			}
			initial := make([]string, 0, len(tc.urls))
			for _, u := range tc.urls {
				initial = append(initial, o.Name+"="+u)
			}
			err := snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
				SnapshotPath:        o.Snapshot,
				Name:                o.Name,
				OutputDataDir:       ref,
				PeerURLs:            tc.urls,
				InitialCluster:      strings.Join(initial, ","),
				InitialClusterToken: token,
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(etcdtest.DataDump(t, ref), etcdtest.DataDump(t, o.DataDir)); diff != "" {
				t.Errorf("restored data folder differs from etcdutl's (-etcdutl +ours):\n%s", diff)
			}
			// The log and the raft snapshot are etcd's bytes, not only read
			// back the same.
			for _, f := range []string{
				"member/wal/0000000000000000-0000000000000000.wal",
				"member/snap/0000000000000001-0000000000000001.snap",
			} {
				want, err := os.ReadFile(filepath.Join(ref, f))
				if err != nil {
					t.Fatal(err)
				}
				got, err := os.ReadFile(filepath.Join(o.DataDir, f))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					n := 0
					for n < len(got) && n < len(want) && got[n] == want[n] {
						n++
					}
					t.Errorf("%s: %d bytes, etcdutl's %d; they differ from byte %d", f, len(got), len(want), n)
				}
			}
		})
	}
}
