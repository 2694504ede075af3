package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// chroot makes dir the process's root, for kubeadm's --rootfs flag.
func chroot(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("resolving --rootfs %q: %w", dir, err)
	}
	if err := syscall.Chroot(abs); err != nil {
		return fmt.Errorf("changing root to %q: %w", abs, err)
	}
	if err := os.Chdir("/"); err != nil {
		return fmt.Errorf("changing directory to / inside %q: %w", abs, err)
	}
	return nil
}
