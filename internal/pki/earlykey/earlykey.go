package earlykey

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"errors"
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
	bits := rsaBits(os.Args[1:], readRegularFile)
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

// rsaBits guesses from a command line (without the program's name)
// whether the command will make RSA keys, and of what size: 0 for none.
// Words not starting with "-" are taken for the command path; flag values
// among them do no harm, as the guess looks at the first words and a few
// flags only. A configuration file given with --config (under --rootfs,
// when given) is read with readFile for its key algorithm; without one,
// or when it cannot be read, the guess is kubeadm's default, RSA-2048.
func rsaBits(args []string, readFile func(string) ([]byte, error)) int {
	var words []string
	var config, rootfs string
	controlPlane := false
	for i, a := range args {
		next := func() string {
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		}
		switch {
		case a == "-h" || a == "--help" || a == "-help":
			return 0
		case a == "--control-plane" || strings.HasPrefix(a, "--control-plane=true"):
			controlPlane = true
		case a == "--config":
			config = next()
		case strings.HasPrefix(a, "--config="):
			config = strings.TrimPrefix(a, "--config=")
		case a == "--rootfs":
			rootfs = next()
		case strings.HasPrefix(a, "--rootfs="):
			rootfs = strings.TrimPrefix(a, "--rootfs=")
		case !strings.HasPrefix(a, "-"):
			words = append(words, a)
		}
	}
	if !commandMakesKeys(words, controlPlane) {
		return 0
	}
	if config == "" {
		return defaultBits
	}
	if rootfs != "" {
		// kubeadm changes its root to rootfs, and its directory to the new
		// root, before it reads the file.
		config = filepath.Join(rootfs, config)
	}
	data, err := readFile(config)
	if err != nil {
		return defaultBits
	}
	return configBits(data)
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
	for line := range strings.Lines(string(data)) {
		line = strings.ReplaceAll(strings.ReplaceAll(line, `"`, ""), "'", "")
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
