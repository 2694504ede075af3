package cli

import (
	"github.com/spf13/cobra"

	"github.com/kubeadm-go/kubeadm/internal/etcd"
	"github.com/kubeadm-go/kubeadm/internal/workflow"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

func newEtcdCmd(streams Streams, env etcd.Node) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "etcd",
		Short: "Work with the stacked etcd member of this control-plane node",
		Long: `Work with the etcd member that kubeadm runs as a static Pod on this
control-plane node. These commands are not part of upstream kubeadm.`,
		Args: cobra.NoArgs,
		RunE: workflow.RequireSubcommand,
	}
	snapshot := &cobra.Command{
		Use:   "snapshot",
		Short: "Save the etcd data of the cluster to a file, or restore it from one",
		Args:  cobra.NoArgs,
		RunE:  workflow.RequireSubcommand,
	}
	snapshot.AddCommand(newEtcdSnapshotSaveCmd(streams, env), newEtcdSnapshotRestoreCmd(streams, env))
	cmd.AddCommand(snapshot)
	return cmd
}

// etcdSaveOptions are the flags of "kubeadm etcd snapshot save".
type etcdSaveOptions struct {
	output  string
	certDir string
}

func newEtcdSnapshotSaveCmd(streams Streams, env etcd.Node) *cobra.Command {
	o := &etcdSaveOptions{}
	cmd := &cobra.Command{
		Use:   "save",
		Short: "Write a snapshot of this node's etcd member to a file",
		Long: `Ask this node's etcd member (the one its manifest
/etc/kubernetes/manifests/etcd.yaml describes) for a snapshot of its data
and write it to a file of mode 0600. The snapshot's checksum is verified
before the file gets its name, so a file that exists is complete. An
existing file is never replaced.

The member is reached at its advertised client URL with the etcd
health-check client certificate (or, if that is missing, the API server's
etcd client certificate).`,
		Example: `  # Save to a new dated folder under /etc/kubernetes/tmp
  kubeadm etcd snapshot save

  # Save to a chosen file
  kubeadm etcd snapshot save --output /var/backups/etcd/snapshot.db`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			env.CertDir = o.certDir
			return env.SaveSnapshot(cmd.Context(), o.output, streams.Out)
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&o.output, "output", "", `File to write the snapshot to (default: /etc/kubernetes/tmp/kubeadm-etcd-snapshot-<date and time>/snapshot.db).`)
	flags.StringVar(&o.certDir, "cert-dir", v1beta4.DefaultCertificatesDir, "Folder of the cluster's certificates (the etcd ones are in its etcd sub-folder).")
	return cmd
}

// etcdRestoreOptions are the flags of "kubeadm etcd snapshot restore".
type etcdRestoreOptions struct {
	certDir string
	force   bool
}

func newEtcdSnapshotRestoreCmd(streams Streams, env etcd.Node) *cobra.Command {
	o := &etcdRestoreOptions{}
	cmd := &cobra.Command{
		Use:   "restore SNAPSHOT",
		Short: "Replace the data of this node's etcd member with a snapshot",
		Long: `Replace the data of this node's etcd member with the content of a snapshot
file, for a cluster whose only etcd member runs on this node.

The snapshot is checked first. Then the etcd manifest is moved into a new
folder /etc/kubernetes/tmp/kubeadm-etcd-restore-<date and time> so that the
kubelet stops the member; once its client port is closed, its data folder
is moved into the same folder (or, on another file system, next to itself;
a data folder that is a mount point stays where it is, and its content is
moved), a new data folder is built from the snapshot, and the manifest is
put back.
The command ends when the member answers again. If a step fails before the
new data is in place, what was moved is moved back.

The restored member starts a new cluster of one member: its data is that
of the snapshot, its name and addresses are those of its manifest, and the
cluster and member IDs are new. With more than one member in the cluster
the command refuses unless --force is given; so it does when the member
does not answer and the number of members cannot be checked (a member whose
data is damaged, for instance). Other members, if any, must then be removed
and joined again.`,
		Example:      `  kubeadm etcd snapshot restore /etc/kubernetes/tmp/kubeadm-etcd-snapshot-2026-01-02-03-04-05/snapshot.db`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			env.CertDir = o.certDir
			return env.RestoreSnapshot(cmd.Context(), args[0], o.force, streams.Out)
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&o.certDir, "cert-dir", v1beta4.DefaultCertificatesDir, "Folder of the cluster's certificates (the etcd ones are in its etcd sub-folder).")
	flags.BoolVarP(&o.force, "force", "f", false, "Restore even if the cluster has other members, or if the member does not answer.")
	return cmd
}
