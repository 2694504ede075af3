package earlykey

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// The key started at init, if any, and its size in bits: taken by the
// first Take of that size.
var (
	mu          sync.Mutex
	pending     <-chan crypto.Signer
	pendingBits int
)

func init() {
	bits := rsaBits(os.Args[1:], readRegularFile, exists)
	if bits == 0 {
		return
	}
	c := make(chan crypto.Signer, 1)
	pending, pendingBits = c, bits
	go func() {
		defer close(c)
		if k, err := rsa.GenerateKey(rand.Reader, bits); err == nil {
			c <- k
		}
	}()
}

// Take returns the RSA key of the given size started at init, waiting for
// it to be done; false when none of that size was started, it failed or it
// was taken before.
func Take(bits int) (crypto.Signer, bool) {
	mu.Lock()
	c := pending
	if bits == pendingBits {
		pending = nil
	} else {
		c = nil
	}
	mu.Unlock()
	if c == nil {
		return nil, false
	}
	k, ok := <-c
	return k, ok
}

// maxConfigSize is the largest configuration file looked at.
const maxConfigSize = 1 << 20

// readRegularFile reads name when it is a regular file of at most
// maxConfigSize bytes. Anything else (a pipe such as /dev/stdin, a
// device) is left alone: reading it here would take its contents from the
// command, or block.
func readRegularFile(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxConfigSize {
		return nil, errors.New("not a small regular file")
	}
	return os.ReadFile(name)
}

// exists reports whether name is there (of any kind).
func exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

// rsaBits guesses from a command line (without the program's name)
// whether the command will make RSA keys, and of what size: 0 for none.
// Words not starting with "-" are taken for the command path; flag values
// among them do no harm, as the guess looks at the first words and a few
// flags only. A configuration file given with --config (under --rootfs,
// when given) is read with readFile for its key algorithm; without one,
// or when it cannot be read, the guess is kubeadm's default, RSA-2048.
// When every key file the command could make is already there (a re-run),
// the command will most likely reuse them all and no key is made ahead.
func rsaBits(args []string, readFile func(string) ([]byte, error), exists func(string) bool) int {
	var words []string
	var config, rootfs, certDir, kubeconfigDir string
	// The flags whose value the guess needs, as --flag value or --flag=value.
	valueFlags := map[string]*string{
		"--config":         &config,
		"--rootfs":         &rootfs,
		"--cert-dir":       &certDir,
		"--kubeconfig-dir": &kubeconfigDir,
	}
	controlPlane := false
	for i, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			return 0
		}
		if a == "--control-plane" || strings.HasPrefix(a, "--control-plane=true") {
			controlPlane = true
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		if target, ok := valueFlags[name]; ok {
			if !hasVal {
				val = ""
				if i+1 < len(args) {
					val = args[i+1]
				}
			}
			*target = val
			continue
		}
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	if !commandMakesKeys(words, controlPlane) {
		return 0
	}
	// kubeadm changes its root to rootfs, and its directory to the new
	// root, before it reads any file.
	underRoot := func(name string) string {
		if rootfs == "" || name == "" {
			return name
		}
		return filepath.Join(rootfs, name)
	}
	bits := defaultBits
	if config != "" {
		if data, err := readFile(underRoot(config)); err == nil {
			bits = configBits(data)
			if certDir == "" {
				certDir = configValue(data, "certificatesDir:")
			}
		}
	}
	if bits == 0 {
		return 0
	}
	if certDir == "" {
		certDir = defaultCertDir
	}
	if kubeconfigDir == "" {
		kubeconfigDir = defaultKubeconfigDir
	}
	files := keyFiles(words, certDir, kubeconfigDir)
	if len(files) == 0 {
		return bits
	}
	for _, f := range files {
		if !exists(underRoot(f)) {
			return bits
		}
	}
	return 0
}

// kubeadm's default folders for certificates and kubeconfig files.
const (
	defaultCertDir       = "/etc/kubernetes/pki"
	defaultKubeconfigDir = "/etc/kubernetes"
)

// The key files of the cluster's certificates (in the certificates'
// folder) and the kubeconfig files, which embed theirs (in the kubeconfig
// folder), by the name of the phase that makes each.
var (
	certKeyFiles = map[string]string{
		"ca":                       "ca.key",
		"apiserver":                "apiserver.key",
		"apiserver-kubelet-client": "apiserver-kubelet-client.key",
		"front-proxy-ca":           "front-proxy-ca.key",
		"front-proxy-client":       "front-proxy-client.key",
		"etcd-ca":                  "etcd/ca.key",
		"etcd-server":              "etcd/server.key",
		"etcd-peer":                "etcd/peer.key",
		"etcd-healthcheck-client":  "etcd/healthcheck-client.key",
		"apiserver-etcd-client":    "apiserver-etcd-client.key",
		"sa":                       "sa.key",
	}
	kubeconfigFiles = map[string]string{
		"admin":              "admin.conf",
		"super-admin":        "super-admin.conf",
		"kubelet":            "kubelet.conf",
		"controller-manager": "controller-manager.conf",
		"scheduler":          "scheduler.conf",
	}
	// joinCertPhases and joinKubeconfigs are what a joining control-plane
	// node makes itself (the CAs and sa.key come from the cluster, its
	// kubelet.conf from the TLS bootstrap).
	joinCertPhases  = []string{"apiserver", "apiserver-kubelet-client", "front-proxy-client", "etcd-server", "etcd-peer", "etcd-healthcheck-client", "apiserver-etcd-client"}
	joinKubeconfigs = []string{"admin", "controller-manager", "scheduler"}
)

// keyFiles lists the files whose presence means that a command with these
// words will, most likely, make no key: its keys and kubeconfig files.
// Empty when the command always makes keys (kubeconfig user, certs
// generate-csr) or the words name no phase known here.
func keyFiles(words []string, certDir, kubeconfigDir string) []string {
	word := func(i int) string {
		if i < len(words) {
			return words[i]
		}
		return ""
	}
	var files []string
	certs := func(names ...string) {
		for _, n := range names {
			files = append(files, filepath.Join(certDir, certKeyFiles[n]))
		}
	}
	kubeconfigs := func(names ...string) {
		for _, n := range names {
			files = append(files, filepath.Join(kubeconfigDir, kubeconfigFiles[n]))
		}
	}
	allOf := func(m map[string]string) []string {
		var names []string
		for n := range m {
			names = append(names, n)
		}
		return names
	}
	switch {
	case word(0) == "join":
		certs(joinCertPhases...)
		kubeconfigs(joinKubeconfigs...)
	case word(0) == "init" && word(1) != "phase":
		certs(allOf(certKeyFiles)...)
		kubeconfigs(allOf(kubeconfigFiles)...)
	case word(0) == "init" && word(2) == "certs":
		if word(3) == "all" || word(3) == "" {
			certs(allOf(certKeyFiles)...)
		} else if _, ok := certKeyFiles[word(3)]; ok {
			certs(word(3))
		}
	case word(0) == "init" && word(2) == "kubeconfig":
		if word(3) == "all" || word(3) == "" {
			kubeconfigs(allOf(kubeconfigFiles)...)
		} else if _, ok := kubeconfigFiles[word(3)]; ok {
			kubeconfigs(word(3))
		}
	}
	return files
}

// defaultBits is the size of kubeadm's default keys (RSA-2048).
const defaultBits = 2048

// commandMakesKeys tells whether the command with these words (its path,
// maybe mixed with flag values) makes keys.
func commandMakesKeys(words []string, controlPlane bool) bool {
	word := func(i int) string {
		if i < len(words) {
			return words[i]
		}
		return ""
	}
	switch word(0) {
	case "init":
		if word(1) != "phase" {
			return true
		}
		return word(2) == "certs" || word(2) == "kubeconfig"
	case "join":
		return controlPlane
	case "kubeconfig":
		return word(1) == "user"
	case "certs":
		return word(1) == "generate-csr"
	}
	return false
}

// configBits reads the key algorithm of a configuration file: the RSA
// size its encryptionAlgorithm (v1beta4) asks for, 0 for ECDSA (whose keys
// cost next to nothing; also the v1beta3 PublicKeysECDSA feature gate),
// the default when it says nothing. It looks at the text line by line,
// YAML or JSON, without parsing it: a wrong answer only costs or spares
// one key made ahead.
func configBits(data []byte) int {
	for line := range unquotedLines(data) {
		if v, ok := value(line, "encryptionAlgorithm:"); ok && v != "" {
			switch v {
			case "RSA-2048":
				return 2048
			case "RSA-3072":
				return 3072
			case "RSA-4096":
				return 4096
			}
			return 0
		}
		if v, ok := value(line, "PublicKeysECDSA:"); ok && v == "true" {
			return 0
		}
	}
	return defaultBits
}

// configValue returns the first value of key in a configuration file's
// text, "" when it has none.
func configValue(data []byte, key string) string {
	for line := range unquotedLines(data) {
		if v, ok := value(line, key); ok {
			return v
		}
	}
	return ""
}

// unquotedLines yields the lines of a configuration file's text without
// their quotes, so that YAML's plain, single- and double-quoted scalars
// and JSON's strings read alike.
func unquotedLines(data []byte) iter.Seq[string] {
	return func(yield func(string) bool) {
		for line := range strings.Lines(string(data)) {
			if !yield(strings.ReplaceAll(strings.ReplaceAll(line, `"`, ""), "'", "")) {
				return
			}
		}
	}
}

// value returns what follows key on a line of YAML or JSON, up to a comma,
// a closing brace or a comment.
func value(line, key string) (string, bool) {
	i := strings.Index(line, key)
	if i < 0 || strings.Contains(line[:i], "#") {
		return "", false
	}
	v := line[i+len(key):]
	if j := strings.IndexAny(v, ",}#"); j >= 0 {
		v = v[:j]
	}
	return strings.TrimSpace(v), true
}
