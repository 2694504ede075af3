package earlykey

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"os"
	"strings"
	"sync"
)

// The key started at init, if any: taken by the first Take.
var (
	mu      sync.Mutex
	pending <-chan crypto.Signer
)

func init() {
	if !makesKeys(os.Args[1:]) {
		return
	}
	c := make(chan crypto.Signer, 1)
	pending = c
	go func() {
		defer close(c)
		if k, err := rsa.GenerateKey(rand.Reader, 2048); err == nil {
			c <- k
		}
	}()
}

// Take returns the RSA-2048 key started at init, waiting for it to be
// done; false when none was started, it failed or it was taken before.
func Take() (crypto.Signer, bool) {
	mu.Lock()
	c := pending
	pending = nil
	mu.Unlock()
	if c == nil {
		return nil, false
	}
	k, ok := <-c
	return k, ok
}

// makesKeys guesses from a command line (without the program's name)
// whether the command will make RSA keys. Words not starting with "-" are
// taken for the command path; flag values among them do no harm, as the
// guess looks at the first words and a few flags only.
func makesKeys(args []string) bool {
	var words []string
	controlPlane := false
	for _, a := range args {
		switch {
		case a == "-h" || a == "--help" || a == "-help":
			return false
		case a == "--control-plane" || strings.HasPrefix(a, "--control-plane=true"):
			controlPlane = true
		case !strings.HasPrefix(a, "-"):
			words = append(words, a)
		}
	}
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
