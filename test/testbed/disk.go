package testbed

import (
	"fmt"
	"os"
	"syscall"
)

// nodeOverhead is a node's disk use beside its images: logs, etcd's data,
// the kubelet's and containerd's state.
const nodeOverhead = 100 << 20

// diskNeed is what starting n more nodes takes on the disk: each node's
// containerd keeps every archive's layers as content and unpacked (seen:
// 2.3 GB a node for 1.3 GB of archives, so 1.8 times the archives), plus
// nodeOverhead.
func (c *Cluster) diskNeed(n int) (uint64, error) {
	var images uint64
	for _, a := range c.Archives {
		fi, err := os.Stat(a)
		if err != nil {
			return 0, err
		}
		images += uint64(fi.Size())
	}
	return uint64(n) * (images*9/5 + nodeOverhead), nil
}

// checkDisk fails, naming the figures, when the disk that holds the
// state folder has less free space than starting n more nodes takes. A
// full disk otherwise shows as an image import failing half-way on one
// node, far from its cause (and CI's machines share their disk).
func (c *Cluster) checkDisk(n int) error {
	if n == 0 {
		return nil
	}
	need, err := c.diskNeed(n)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.StateDir, 0o755); err != nil {
		return err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(c.StateDir, &st); err != nil {
		return fmt.Errorf("free space under %s: %w", c.StateDir, err)
	}
	free := st.Bavail * uint64(st.Bsize)
	if free < need {
		return fmt.Errorf("starting %d nodes takes about %s of disk under %s; only %s is free", n, gib(need), c.StateDir, gib(free))
	}
	return nil
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
