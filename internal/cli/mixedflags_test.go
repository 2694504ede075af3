package cli

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestCheckMixedArguments(t *testing.T) {
	cases := []struct {
		args    []string
		wantErr bool
	}{
		{[]string{"--cert-dir", "/x"}, false},
		{[]string{"--config", "c.yaml"}, false},
		{[]string{"--config", "c.yaml", "--dry-run", "--skip-token-print", "--node-name", "n"}, false},
		{[]string{"--config", "c.yaml", "--cert-dir", "/x"}, true},
		{[]string{"--config", "c.yaml", "--pod-network-cidr", "10.0.0.0/16"}, true},
	}
	for _, tc := range cases {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.String("config", "", "")
		fs.String("cert-dir", "", "")
		fs.String("pod-network-cidr", "", "")
		fs.String("node-name", "", "")
		fs.Bool("dry-run", false, "")
		fs.Bool("skip-token-print", false, "")
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := checkMixedArguments(fs)
		if (err != nil) != tc.wantErr {
			t.Errorf("%v: error %v, want error %v", tc.args, err, tc.wantErr)
		}
	}
}
