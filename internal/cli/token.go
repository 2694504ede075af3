package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kubeadm-go/kubeadm/internal/config"
)

func newTokenCmd(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage bootstrap tokens",
		Long: `Bootstrap tokens let a new node prove it may join the cluster, and let it check
that it talks to the right cluster. A token has the form "abcdef.0123456789abcdef":
a public ID and a secret, both made of lower-case letters and digits.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newTokenGenerateCmd())
	return cmd
}

func newTokenGenerateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "generate",
		Short: "Print a new random bootstrap token",
		Long: `Print a new random bootstrap token without creating it in any cluster.

Pass it to "kubeadm init --token" or put it in a configuration file, so the
token is known before the cluster exists.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := config.GenerateToken()
			if err != nil {
				return fmt.Errorf("generating a bootstrap token: %w", err)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), tok)
			return err
		},
	}
}
