package cli

import "github.com/spf13/cobra"

// newAlphaCmd is the group of experimental commands. Upstream kubeadm
// keeps it although every command in it has graduated or gone, so scripts
// that run "kubeadm alpha ..." get its help (exit 0) instead of "unknown
// command"; like upstream's, it neither runs nor lists anything, and the
// root's help shows it as a help topic.
func newAlphaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "alpha",
		Short: "Experimental commands (none at present)",
	}
}
