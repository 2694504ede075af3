package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newCompletionCmd(streams Streams, root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "completion SHELL",
		Short: "Print a shell completion script (bash, zsh or fish)",
		Long: `Print a script that teaches your shell to complete kubeadm's commands and flags.

Load it into the current bash session with:

    source <(kubeadm completion bash)

or save it where your shell picks up completions at start-up, for example
/etc/bash_completion.d/kubeadm, ~/.zsh/completion/_kubeadm or
~/.config/fish/completions/kubeadm.fish.`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("shell not specified")
			}
			if len(args) > 1 {
				return fmt.Errorf("too many arguments. expected only the shell type")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			default:
				return fmt.Errorf("unsupported shell type %q", args[0])
			}
		},
	}
}
