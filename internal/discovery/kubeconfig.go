package discovery

import (
	"errors"
	"fmt"
	"net/url"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

const (
	// ClusterName is the cluster's name in the kubeconfig TokenKubeconfig
	// builds, as in upstream's bootstrap-kubelet.conf.
	ClusterName = "kubernetes"
	// BootstrapUser is the user holding the bootstrap token there.
	BootstrapUser = "tls-bootstrap-token-user"
)

// TokenKubeconfig returns a kubeconfig for cluster (its server and CA data
// only) with token as the bearer token of user BootstrapUser, in context
// "BootstrapUser@ClusterName", which is current.
func TokenKubeconfig(cluster *clientcmdapi.Cluster, token string) *clientcmdapi.Config {
	contextName := BootstrapUser + "@" + ClusterName
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ClusterName] = &clientcmdapi.Cluster{
		Server:                   cluster.Server,
		CertificateAuthorityData: append([]byte(nil), cluster.CertificateAuthorityData...),
	}
	cfg.AuthInfos[BootstrapUser] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: ClusterName, AuthInfo: BootstrapUser}
	cfg.CurrentContext = contextName
	return cfg
}

// HasCredentials tells whether the user of cfg's current context can
// authenticate: a token or token file, a client certificate with its key,
// a user name with a password, an exec plugin or an auth provider.
func HasCredentials(cfg *clientcmdapi.Config) bool {
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return false
	}
	u := cfg.AuthInfos[ctx.AuthInfo]
	if u == nil {
		return false
	}
	hasCert := u.ClientCertificate != "" || len(u.ClientCertificateData) > 0
	hasKey := u.ClientKey != "" || len(u.ClientKeyData) > 0
	return u.Token != "" || u.TokenFile != "" || (hasCert && hasKey) ||
		(u.Username != "" && u.Password != "") || u.Exec != nil || u.AuthProvider != nil
}

// currentCluster returns the name and cluster of cfg's current context or,
// without a current context, its only cluster. The cluster must have an
// https server and a CA. In the returned copy a CA named by path is read
// into CertificateAuthorityData, and insecure-skip-tls-verify is off.
func currentCluster(cfg *clientcmdapi.Config) (string, *clientcmdapi.Cluster, error) {
	var name string
	switch ctx := cfg.Contexts[cfg.CurrentContext]; {
	case ctx != nil:
		name = ctx.Cluster
	case cfg.CurrentContext != "":
		return "", nil, fmt.Errorf("the current context %q does not exist", cfg.CurrentContext)
	case len(cfg.Clusters) == 1:
		for n := range cfg.Clusters {
			name = n
		}
	default:
		return "", nil, fmt.Errorf("there is no current context, and %d clusters instead of one", len(cfg.Clusters))
	}
	cluster := cfg.Clusters[name]
	if cluster == nil {
		return "", nil, fmt.Errorf("the cluster %q of the current context does not exist", name)
	}
	c := cluster.DeepCopy()
	if len(c.CertificateAuthorityData) == 0 && c.CertificateAuthority != "" {
		data, err := boundedread.ReadFile(c.CertificateAuthority, boundedread.MaxFile)
		if err != nil {
			return "", nil, fmt.Errorf("reading the CA certificate of cluster %q: %w", name, err)
		}
		c.CertificateAuthorityData = data
	}
	c.CertificateAuthority = ""
	c.InsecureSkipTLSVerify = false // the CA is required and always used
	if len(c.CertificateAuthorityData) == 0 {
		return "", nil, fmt.Errorf("the cluster %q has no CA certificate", name)
	}
	if err := checkServer(c.Server); err != nil {
		return "", nil, fmt.Errorf("the cluster %q: %w", name, err)
	}
	return name, c, nil
}

// checkServer accepts an https URL with a host.
func checkServer(server string) error {
	u, err := url.Parse(server)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("the API server address %q is not an https URL", server)
	}
	return nil
}

// parseClusterInfo reads the kubeconfig of cluster-info: exactly one
// cluster, with an https server and embedded CA certificates.
func parseClusterInfo(data []byte) (*clientcmdapi.Cluster, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("cluster-info has no %q entry", bootstrapapi.KubeConfigKey)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("parsing the kubeconfig in cluster-info: %w", err)
	}
	if n := len(cfg.Clusters); n != 1 {
		return nil, fmt.Errorf("the kubeconfig in cluster-info has %d clusters instead of one", n)
	}
	var c *clientcmdapi.Cluster
	for _, only := range cfg.Clusters {
		c = only
	}
	if len(c.CertificateAuthorityData) == 0 {
		return nil, errors.New("the cluster in cluster-info has no embedded CA certificate")
	}
	if err := checkServer(c.Server); err != nil {
		return nil, fmt.Errorf("the cluster in cluster-info: %w", err)
	}
	return &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: c.CertificateAuthorityData}, nil
}
