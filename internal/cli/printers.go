package cli

import (
	"github.com/spf13/pflag"

	"github.com/kubeadm-go/kubeadm/internal/output"
)

// addPrinterFlags adds the printer flags upstream's commands with -o have
// and returns where --allow-missing-template-keys is kept.
// --show-managed-fields is accepted for scripts: kubeadm's output documents
// have no managed fields.
func addPrinterFlags(f *pflag.FlagSet) *bool {
	allow := f.Bool("allow-missing-template-keys", true, "Let templates and JSONPath expressions name keys the output lacks (template and jsonpath formats).")
	f.Bool("show-managed-fields", false, "Keep managedFields in JSON and YAML output (the output has none; accepted for compatibility).")
	return allow
}

// newPrinter returns the printer of a machine-readable -o format, or nil
// for text (or "").
func newPrinter(format string, allowMissingKeys bool) (*output.Printer, error) {
	if format == "" || format == "text" {
		return nil, nil
	}
	return output.New(format, allowMissingKeys)
}
