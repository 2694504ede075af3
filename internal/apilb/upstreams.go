package apilb

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kubeadm-go/kubeadm/internal/atomicfile"
	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// Where the balancer listens, and where its state lives on a node.
const (
	// ListenAddress is the loopback address and port the balancer serves.
	ListenAddress = "127.0.0.1:7445"
	// ServerName is the name clients of the balancer check the API
	// server's certificate against (tls-server-name): every certificate
	// kubeadm makes for an API server carries it, where none carries
	// 127.0.0.1.
	ServerName = "kubernetes"
	// StateDir is the folder of the upstream list, under /etc/kubernetes.
	StateDir = "apiserver-lb"
	// UpstreamsFile is the name of the upstream list in StateDir.
	UpstreamsFile = "upstreams"
)

// maxUpstreamsFile bounds the upstream list file: a few thousand
// addresses are far more than any cluster has API servers.
const maxUpstreamsFile = 256 << 10

// NormalizeUpstreams checks that each entry is a host:port with an IP
// address or DNS name and a port from 1 to 65535, and returns the entries
// sorted with duplicates removed. IPv6 addresses are written in brackets.
func NormalizeUpstreams(list []string) ([]string, error) {
	out := make([]string, 0, len(list))
	for _, e := range list {
		host, port, err := net.SplitHostPort(strings.TrimSpace(e))
		if err != nil {
			return nil, fmt.Errorf("upstream %q: %w", e, err)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("upstream %q: the port %q is not a number from 1 to 65535", e, port)
		}
		if host == "" {
			return nil, fmt.Errorf("upstream %q: no host", e)
		}
		if ip := net.ParseIP(host); ip != nil {
			host = ip.String()
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ReadUpstreams reads the upstream list at path: one host:port a line;
// blank lines and lines starting with # are skipped. A missing file is an
// empty list, not an error.
func ReadUpstreams(path string) ([]string, error) {
	data, err := boundedread.ReadFile(path, maxUpstreamsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var list []string
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		list = append(list, line)
	}
	list, err = NormalizeUpstreams(list)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return list, nil
}

// WriteUpstreams replaces the upstream list at path atomically (mode
// 0644: it holds addresses, no secret), creating its folder if needed. An
// empty list is refused: it would make the balancer forget every API
// server it knows.
func WriteUpstreams(path string, list []string) error {
	list, err := NormalizeUpstreams(list)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return fmt.Errorf("writing %s: refusing an empty upstream list", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	var b strings.Builder
	b.WriteString("# API servers the node-local load balancer forwards to (written by kubeadm)\n")
	for _, e := range list {
		b.WriteString(e)
		b.WriteByte('\n')
	}
	if err := atomicfile.Write(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
