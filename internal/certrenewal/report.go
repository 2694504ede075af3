package certrenewal

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/output"
)

// ReportKind is the kind of the document a run prints with -o and keeps
// in the status file. Upstream kubeadm has no such command; the document
// uses the API version of kubeadm's other output documents.
const ReportKind = "CertificateRenewal"

// Report is what one run did.
type Report struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	// Time is when the run started.
	Time metav1.Time `json:"time"`
	// Window: what expires within it was due.
	Window metav1.Duration `json:"window"`
	// Renewed lists the certificates the run renewed, NotDue those it left
	// alone, ExternallyManaged the due ones it could not renew (their CA's
	// key is not on the node).
	Renewed           []CertReport `json:"renewed"`
	NotDue            []CertReport `json:"notDue"`
	ExternallyManaged []CertReport `json:"externallyManaged,omitempty"`
	// Components lists what was done to each component that uses a
	// renewed file, in the order it was done.
	Components []ComponentReport `json:"components"`
	// Pending lists the components that use renewed files but are not
	// known to use them yet; the next run restarts them.
	Pending []string `json:"pending,omitempty"`
	// BackupDir holds the previous files of what was renewed.
	BackupDir string `json:"backupDir,omitempty"`
	// Error is why the run failed; empty when it succeeded.
	Error string `json:"error,omitempty"`
	// Finished is when the run ended (zero while it runs).
	Finished *metav1.Time `json:"finished,omitempty"`
}

// CertReport is one certificate of a report.
type CertReport struct {
	Name string `json:"name"`
	// ExpirationDate is when it expired before the run, NewExpirationDate
	// when the renewed one expires.
	ExpirationDate    metav1.Time  `json:"expirationDate"`
	NewExpirationDate *metav1.Time `json:"newExpirationDate,omitempty"`
	// UsedBy is the component that reads it ("" for none: admin.conf).
	// The CISHardening approver reads its own by itself: nothing restarts.
	UsedBy string `json:"usedBy,omitempty"`
}

// Component actions and results of a report.
const (
	ActionRestarted  = "restarted"
	ActionReloaded   = "reloaded"
	ResultHealthy    = "healthy"
	ResultRolledBack = "rolled back"
	ResultFailed     = "failed"
)

// ComponentReport is what was done to one component.
type ComponentReport struct {
	Name   string `json:"name"`
	Action string `json:"action"`
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

func newReport() *Report {
	return &Report{Kind: ReportKind, APIVersion: output.APIVersion, Renewed: []CertReport{}, NotDue: []CertReport{}, Components: []ComponentReport{}}
}

// ReadStatus reads the report the latest run left at path; nil, nil when
// no run left one.
func ReadStatus(path string) (*Report, error) {
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the renewal status: %w", err)
	}
	r := &Report{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("reading the renewal status %s: %w", path, err)
	}
	return r, nil
}

// writeStatus writes r to path atomically (0600: it names no secret, but
// only root needs it).
func writeStatus(path string, r *Report) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("making the folder of the renewal status: %w", err)
	}
	if err := atomicfile.Write(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the renewal status: %w", err)
	}
	return nil
}
