package kubeconfig

import (
	"fmt"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// Load reads a kubeconfig file of at most boundedread.MaxFile. Relative
// file references in it are made absolute, relative to the file's folder.
// A file that cannot be read, or is too large, gives the error of
// boundedread.ReadFile, which names the path.
func Load(path string) (*clientcmdapi.Config, error) {
	data, err := boundedread.ReadFile(path, boundedread.MaxFile)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse is Load of data, the content of the file at path (read already by
// the caller, which compares it with a later read, say).
func Parse(path string, data []byte) (*clientcmdapi.Config, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig file %s: %w", path, err)
	}
	// What clientcmd.LoadFromFile records, and ResolveLocalPaths needs to
	// find the file's folder.
	for _, c := range cfg.Clusters {
		c.LocationOfOrigin = path
	}
	for _, u := range cfg.AuthInfos {
		u.LocationOfOrigin = path
	}
	for _, c := range cfg.Contexts {
		c.LocationOfOrigin = path
	}
	if err := clientcmd.ResolveLocalPaths(cfg); err != nil {
		return nil, fmt.Errorf("reading the kubeconfig file %s: %w", path, err)
	}
	return cfg, nil
}

// RESTConfig returns the client configuration of cfg's current context,
// with the API server's URL replaced by server unless it is "". The files
// the context's cluster and user name (CA, client certificate and key,
// token file) are read here, each up to boundedread.MaxFile, and embedded,
// so that client-go reads none of them itself, without a limit; cfg is
// not changed.
func RESTConfig(cfg *clientcmdapi.Config, server string) (*rest.Config, error) {
	c := cfg.DeepCopy()
	if err := embedFiles(c); err != nil {
		return nil, err
	}
	overrides := &clientcmd.ConfigOverrides{}
	overrides.ClusterInfo.Server = server
	return clientcmd.NewNonInteractiveClientConfig(*c, "", overrides, nil).ClientConfig()
}

// embedFiles reads the files cfg's current cluster and user name into the
// matching data fields, and clears the paths. A missing context, cluster
// or user is left for client-go to report.
func embedFiles(cfg *clientcmdapi.Config) error {
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return nil
	}
	read := func(path, what string, data *[]byte) error {
		if path == "" || len(*data) > 0 {
			return nil
		}
		b, err := boundedread.ReadFile(path, boundedread.MaxFile)
		if err != nil {
			return fmt.Errorf("reading the %s the kubeconfig names: %w", what, err)
		}
		*data = b
		return nil
	}
	if cluster := cfg.Clusters[ctx.Cluster]; cluster != nil {
		if err := read(cluster.CertificateAuthority, "CA certificate", &cluster.CertificateAuthorityData); err != nil {
			return err
		}
		cluster.CertificateAuthority = ""
	}
	user := cfg.AuthInfos[ctx.AuthInfo]
	if user == nil {
		return nil
	}
	if err := read(user.ClientCertificate, "client certificate", &user.ClientCertificateData); err != nil {
		return err
	}
	if err := read(user.ClientKey, "client key", &user.ClientKeyData); err != nil {
		return err
	}
	user.ClientCertificate, user.ClientKey = "", ""
	if user.TokenFile != "" {
		if user.Token == "" {
			var token []byte
			if err := read(user.TokenFile, "token file", &token); err != nil {
				return err
			}
			// client-go trims the token it reads again from the file.
			user.Token = strings.TrimSpace(string(token))
		}
		user.TokenFile = ""
	}
	return nil
}
