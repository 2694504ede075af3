package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/version"
)

func newVersionCmd(streams Streams) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of kubeadm",
		Long: `Print which Kubernetes release this kubeadm deploys (also its default for
--kubernetes-version and image tags) and which build of the tool this is.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return printVersion(cmd, output, version.Get())
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format; one of: short, json, yaml")
	return cmd
}

func printVersion(cmd *cobra.Command, output string, info version.Info) error {
	out := cmd.OutOrStdout()
	wrapped := struct {
		ClientVersion version.Info `json:"clientVersion"`
	}{info}
	switch output {
	case "":
		_, err := fmt.Fprintf(out, "kubeadm version: &version.Info{Major:%q, Minor:%q, EmulationMajor:\"\", EmulationMinor:\"\", MinCompatibilityMajor:\"\", MinCompatibilityMinor:\"\", GitVersion:%q, GitCommit:%q, GitTreeState:%q, BuildDate:%q, GoVersion:%q, Compiler:%q, Platform:%q, ProjectVersion:%q}\n",
			info.Major, info.Minor, info.GitVersion, info.GitCommit, info.GitTreeState, info.BuildDate, info.GoVersion, info.Compiler, info.Platform, info.ProjectVersion)
		return err
	case "short":
		_, err := fmt.Fprintln(out, info.GitVersion)
		return err
	case "json":
		b, err := json.MarshalIndent(wrapped, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	case "yaml":
		b, err := yaml.Marshal(wrapped)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(out, string(b))
		return err
	default:
		return fmt.Errorf("invalid output format: %s", output)
	}
}
