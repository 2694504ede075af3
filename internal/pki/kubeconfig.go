package pki

import (
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
	"github.com/kubeadm-go/kubeadm/internal/cis"
)

// KubeconfigCert describes the client certificate embedded in one of the
// kubeconfig files of a control-plane node. All are signed by the cluster
// CA ("ca") and are for client authentication.
type KubeconfigCert struct {
	// File is the file name in the kubeconfig folder: "admin.conf".
	File string
	// CommonName is the subject's common name (also the kubeconfig's user
	// name); empty means "system:node:<node name>".
	CommonName   string
	Organization []string
	// LocalEndpoint: the kubeconfig points at this node's own API server
	// rather than at the control-plane endpoint.
	LocalEndpoint bool
	// KubeletOwned marks kubelet.conf, whose certificate the kubelet rotates
	// itself: "certs check-expiration" and "certs renew" leave it alone.
	KubeletOwned bool
	// Description says what the kubeconfig is for, in a few words.
	Description string
}

// Name returns the user and certificate common name for the node nodeName.
func (k KubeconfigCert) Name(nodeName string) string {
	if k.CommonName != "" {
		return k.CommonName
	}
	return "system:node:" + nodeName
}

// Spec is the client certificate the kubeconfig holds under cfg.
func (k KubeconfigCert) Spec(cfg *kubeadm.InitConfiguration) CertSpec {
	return CertSpec{
		CommonName:   k.Name(cfg.NodeRegistration.Name),
		Organization: k.Organization,
		Usages:       []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		Validity:     CertificateValidity(&cfg.ClusterConfiguration),
	}
}

// KubeconfigTable returns the kubeconfig files of a control-plane node, in
// the order kubeadm writes them. It returns a new slice on each call.
func KubeconfigTable() []KubeconfigCert {
	return []KubeconfigCert{
		{File: "admin.conf", CommonName: "kubernetes-admin", Organization: []string{"kubeadm:cluster-admins"},
			Description: "client certificate embedded in admin.conf, the kubeconfig of the administrator and of kubeadm"},
		{File: "super-admin.conf", CommonName: "kubernetes-super-admin", Organization: []string{"system:masters"},
			Description: "client certificate embedded in super-admin.conf, the break-glass kubeconfig"},
		{File: "kubelet.conf", Organization: []string{"system:nodes"}, KubeletOwned: true,
			Description: "client certificate embedded in kubelet.conf, the kubelet's bootstrap kubeconfig"},
		{File: "controller-manager.conf", CommonName: "system:kube-controller-manager", LocalEndpoint: true,
			Description: "client certificate embedded in controller-manager.conf, the controller manager's kubeconfig"},
		{File: "scheduler.conf", CommonName: "system:kube-scheduler", LocalEndpoint: true,
			Description: "client certificate embedded in scheduler.conf, the scheduler's kubeconfig"},
	}
}

// LookupKubeconfig finds a kubeconfig of the table by file name.
func LookupKubeconfig(file string) (KubeconfigCert, bool) {
	for _, k := range KubeconfigTable() {
		if k.File == file {
			return k, true
		}
	}
	return KubeconfigCert{}, false
}

// IsKubeconfig reports whether name, a Name of CheckExpiration's list, is
// a kubeconfig file of the kubeconfig folder (one of KubeconfigTable, or
// the CISHardening profile's approver's) rather than a certificate file.
func IsKubeconfig(name string) bool {
	if _, ok := LookupKubeconfig(name); ok {
		return true
	}
	return name == cis.ApproverKubeconfigFile
}

// KubeconfigPath is the path of the kubeconfig file name (as IsKubeconfig
// knows it) under the kubeconfig folder dir.
func KubeconfigPath(dir, name string) string {
	if name == cis.ApproverKubeconfigFile {
		return cis.ApproverKubeconfig(dir)
	}
	return filepath.Join(dir, name)
}

// kubeconfigFile is the part of a kubeconfig file kubeadm writes and reads.
// Its fields are in the order client tools write them.
type kubeconfigFile struct {
	APIVersion     string         `json:"apiVersion"`
	Clusters       []namedCluster `json:"clusters"`
	Contexts       []namedContext `json:"contexts"`
	CurrentContext string         `json:"current-context"`
	Kind           string         `json:"kind"`
	Users          []namedUser    `json:"users"`
}

type namedCluster struct {
	Cluster struct {
		CertificateAuthorityData string `json:"certificate-authority-data,omitempty"`
		Server                   string `json:"server"`
	} `json:"cluster"`
	Name string `json:"name"`
}

type namedContext struct {
	Context struct {
		Cluster string `json:"cluster"`
		User    string `json:"user"`
	} `json:"context"`
	Name string `json:"name"`
}

type namedUser struct {
	Name string   `json:"name"`
	User authInfo `json:"user"`
}

type authInfo struct {
	ClientCertificateData string `json:"client-certificate-data,omitempty"`
	ClientCertificate     string `json:"client-certificate,omitempty"`
	ClientKeyData         string `json:"client-key-data,omitempty"`
	ClientKey             string `json:"client-key,omitempty"`
}

// userOf returns the index of the user the current context uses, or of the
// only user.
func (f *kubeconfigFile) userOf() (int, error) {
	name := ""
	for _, c := range f.Contexts {
		if c.Name == f.CurrentContext {
			name = c.Context.User
		}
	}
	for i, u := range f.Users {
		if u.Name == name {
			return i, nil
		}
	}
	if len(f.Users) == 1 {
		return 0, nil
	}
	return 0, errors.New("no user for the current context")
}

// ReadKubeconfigClientCert returns the client certificate embedded in the
// kubeconfig file at path (client-certificate-data of the current
// context's user).
func ReadKubeconfigClientCert(path string) (*x509.Certificate, error) {
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return nil, err
	}
	var f kubeconfigFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: not a kubeconfig file: %w", path, err)
	}
	i, err := f.userOf()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	u := f.Users[i].User
	if u.ClientCertificateData == "" {
		return nil, fmt.Errorf("%s: the user %q has no embedded client certificate", path, f.Users[i].Name)
	}
	pemData, err := base64.StdEncoding.DecodeString(u.ClientCertificateData)
	if err != nil {
		return nil, fmt.Errorf("%s: client-certificate-data: %w", path, err)
	}
	cert, err := ParseCertPEM(pemData)
	if err != nil {
		return nil, fmt.Errorf("%s: client-certificate-data: %w", path, err)
	}
	return cert, nil
}

// PartialKubeconfig returns the kubeconfig file "certs generate-csr"
// writes: cluster, context and user, with the user's private key but
// neither a certificate nor the CA (both to come from an external CA).
func PartialKubeconfig(cfg *kubeadm.InitConfiguration, k KubeconfigCert, key crypto.Signer) ([]byte, error) {
	server, err := APIServerURL(cfg, k.LocalEndpoint)
	if err != nil {
		return nil, err
	}
	keyPEM, err := EncodeKeyPEM(key)
	if err != nil {
		return nil, err
	}
	user := k.Name(cfg.NodeRegistration.Name)
	clusterName := cfg.ClusterName
	if clusterName == "" {
		clusterName = "kubernetes"
	}
	f := kubeconfigFile{APIVersion: "v1", Kind: "Config"}
	f.Clusters = []namedCluster{{Name: clusterName}}
	f.Clusters[0].Cluster.Server = server
	ctxName := user + "@" + clusterName
	f.Contexts = []namedContext{{Name: ctxName}}
	f.Contexts[0].Context.Cluster = clusterName
	f.Contexts[0].Context.User = user
	f.CurrentContext = ctxName
	f.Users = []namedUser{{Name: user, User: authInfo{ClientKeyData: base64.StdEncoding.EncodeToString(keyPEM)}}}
	return yaml.Marshal(f)
}

// replaceKubeconfigCert puts cert and key in place of the embedded client
// certificate and key of the kubeconfig at path, keeping every other field,
// and writes the file (0600) with w.
func replaceKubeconfigCert(path string, key crypto.Signer, cert *x509.Certificate, w FileWriter) error {
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return err
	}
	var generic map[string]any
	if err := yaml.Unmarshal(data, &generic); err != nil {
		return fmt.Errorf("%s: not a kubeconfig file: %w", path, err)
	}
	var f kubeconfigFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("%s: not a kubeconfig file: %w", path, err)
	}
	i, err := f.userOf()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	users, _ := generic["users"].([]any)
	if i >= len(users) {
		return fmt.Errorf("%s: malformed users list", path)
	}
	entry, _ := users[i].(map[string]any)
	user, _ := entry["user"].(map[string]any)
	if user == nil {
		return fmt.Errorf("%s: malformed user %q", path, f.Users[i].Name)
	}
	keyPEM, err := EncodeKeyPEM(key)
	if err != nil {
		return err
	}
	user["client-certificate-data"] = base64.StdEncoding.EncodeToString(EncodeCertPEM(cert))
	user["client-key-data"] = base64.StdEncoding.EncodeToString(keyPEM)
	delete(user, "client-certificate")
	delete(user, "client-key")
	out, err := yaml.Marshal(generic)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return writeFile(w, filepath.Clean(path), out, KeyMode)
}
