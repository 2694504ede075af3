package preflight

import (
	"bytes"
	"compress/gzip"
	"context"
	"strings"
	"testing"
)

const fullKernelConfig = `# comment
CONFIG_NAMESPACES=y
CONFIG_NET_NS=y
CONFIG_PID_NS=y
CONFIG_IPC_NS=y
CONFIG_UTS_NS=y
CONFIG_CPUSETS=y
CONFIG_MEMCG=y
CONFIG_INET=y
CONFIG_EXT4_FS=m
CONFIG_PROC_FS=y
CONFIG_NETFILTER_XT_TARGET_REDIRECT=m
CONFIG_NETFILTER_XT_MATCH_COMMENT=m
CONFIG_FAIR_GROUP_SCHED=y
CONFIG_CGROUPS=y
CONFIG_CGROUP_CPUACCT=y
CONFIG_CGROUP_DEVICE=y
CONFIG_CGROUP_FREEZER=y
CONFIG_CGROUP_BPF=y
CONFIG_CGROUP_PIDS=y
CONFIG_CGROUP_SCHED=y
CONFIG_OVERLAY_FS=m
# CONFIG_AUFS_FS is not set
CONFIG_BLK_DEV_DM=m
CONFIG_CFS_BANDWIDTH=y
CONFIG_SECCOMP=y
CONFIG_SECCOMP_FILTER=y
`

const procCgroupsV1 = `#subsys_name	hierarchy	num_cgroups	enabled
cpuset	3	1	1
cpu	1	1	1
cpuacct	2	1	1
blkio	7	1	1
memory	4	22	1
devices	5	1	1
freezer	6	1	1
net_cls	0	1	1
hugetlb	0	1	1
pids	8	1	1
`

func gz(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.String()
}

// sysHost is a machine for the system verification: cgroup v2 unless v1
// is asked for.
func sysHost(t *testing.T, v1 bool, kubelet string) *fakeHost {
	h := &fakeHost{
		kernel: "6.8.0-45-generic",
		files: map[string]string{
			"/proc/config.gz":   gz(t, fullKernelConfig),
			"/proc/self/cgroup": "0::/user.slice/session-1.scope\n",
			"/sys/fs/cgroup/user.slice/session-1.scope/cgroup.freeze": "0\n",
		},
		commands: map[string]fakeCommand{"kubelet --version": {out: "Kubernetes " + kubelet + "\n"}},
	}
	if v1 {
		h.files["/proc/mounts"] = "tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
		h.files["/proc/cgroups"] = procCgroupsV1
	} else {
		h.files["/proc/mounts"] = "proc /proc proc rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n"
		h.files["/sys/fs/cgroup/cgroup.controllers"] = "cpuset cpu io memory hugetlb pids rdma misc\n"
	}
	return h
}

func TestSystemVerification(t *testing.T) {
	cgroupV1Note := "this machine uses cgroup v1"
	tests := []struct {
		name       string
		host       func(t *testing.T) *fakeHost
		wantWarns  []string
		wantErrs   []string
		wantReport []string // lines the report must hold; nil: no report
	}{
		{
			name: "cgroup v2, all good",
			host: func(t *testing.T) *fakeHost { return sysHost(t, false, "v1.36.3") },
		},
		{
			name:     "cgroup v1 with a kubelet that refuses it",
			host:     func(t *testing.T) *fakeHost { return sysHost(t, true, "v1.36.3") },
			wantErrs: []string{cgroupV1Note},
			wantReport: []string{
				"KERNEL_VERSION: 6.8.0-45-generic", "CONFIG_EXT4_FS: enabled (as module)", "CONFIG_AUFS_FS: not set (needed for aufs)",
				"CONFIG_CGROUP_FREEZER: enabled", "OS: Linux", "CGROUPS_CPUACCT: enabled", "CGROUPS_BLKIO: enabled",
			},
		},
		{
			name:       "cgroup v1 with an older kubelet",
			host:       func(t *testing.T) *fakeHost { return sysHost(t, true, "v1.34.2") },
			wantWarns:  []string{cgroupV1Note},
			wantReport: []string{"CGROUPS_FREEZER: enabled"},
		},
		{
			name: "no kubelet",
			host: func(t *testing.T) *fakeHost {
				h := sysHost(t, false, "")
				h.commands = nil
				return h
			},
			wantErrs: []string{"cannot determine the kubelet version"},
		},
		{
			name: "old kernel",
			host: func(t *testing.T) *fakeHost {
				h := sysHost(t, false, "v1.36.3")
				h.kernel = "4.18.0-553.el8_10.x86_64"
				return h
			},
			wantWarns:  []string{"the kernel 4.18.0-553.el8_10.x86_64 is older than the kernels kubeadm is tested with (4.19 or newer"},
			wantReport: []string{"KERNEL_VERSION: 4.18.0-553.el8_10.x86_64"},
		},
		{
			name: "kernel config in /boot, an option missing",
			host: func(t *testing.T) *fakeHost {
				h := sysHost(t, false, "v1.36.3")
				delete(h.files, "/proc/config.gz")
				h.files["/boot/config-6.8.0-45-generic"] = strings.Replace(fullKernelConfig, "CONFIG_PID_NS=y\n", "", 1)
				return h
			},
			wantErrs:   []string{"the kernel lacks required options: CONFIG_PID_NS"},
			wantReport: []string{"CONFIG_PID_NS: missing", "CONFIG_CGROUP_BPF: enabled"},
		},
		{
			name: "no kernel config",
			host: func(t *testing.T) *fakeHost {
				h := sysHost(t, false, "v1.36.3")
				delete(h.files, "/proc/config.gz")
				return h
			},
			wantErrs:   []string{"cannot find the kernel configuration (looked in /proc/config.gz, /boot/config-6.8.0-45-generic"},
			wantReport: []string{"KERNEL_VERSION: 6.8.0-45-generic", "OS: Linux"},
		},
		{
			name: "cgroup v2 without the memory controller nor hugetlb",
			host: func(t *testing.T) *fakeHost {
				h := sysHost(t, false, "v1.36.3")
				h.files["/sys/fs/cgroup/cgroup.controllers"] = "cpuset cpu io pids\n"
				return h
			},
			wantWarns:  []string{"optional cgroup controllers are missing: hugetlb"},
			wantErrs:   []string{"required cgroup controllers are missing: memory"},
			wantReport: []string{"CGROUPS_MEMORY: missing", "CGROUPS_DEVICES: enabled", "CGROUPS_HUGETLB: missing"},
		},
		{
			name: "cgroup v2 freezer missing",
			host: func(t *testing.T) *fakeHost {
				h := sysHost(t, false, "v1.36.3")
				delete(h.files, "/sys/fs/cgroup/user.slice/session-1.scope/cgroup.freeze")
				return h
			},
			wantErrs:   []string{"required cgroup controllers are missing: freezer"},
			wantReport: []string{"CGROUPS_FREEZER: missing"},
		},
		{
			name: "cgroup v2 in the root cgroup: the kernel decides",
			host: func(t *testing.T) *fakeHost {
				h := sysHost(t, false, "v1.36.3")
				h.files["/proc/self/cgroup"] = "0::/\n"
				h.kernel = "5.1.0"
				return h
			},
			wantErrs: []string{"required cgroup controllers are missing: freezer"},
		},
		{
			name: "cgroup v1 missing a controller",
			host: func(t *testing.T) *fakeHost {
				h := sysHost(t, true, "v1.34.0")
				h.files["/proc/cgroups"] = strings.Replace(procCgroupsV1, "pids\t8\t1\t1", "pids\t0\t1\t0", 1)
				return h
			},
			wantWarns: []string{cgroupV1Note},
			wantErrs:  []string{"required cgroup controllers are missing: pids"},
		},
		{
			name: "no /proc/mounts",
			host: func(t *testing.T) *fakeHost {
				h := sysHost(t, false, "v1.36.3")
				delete(h.files, "/proc/mounts")
				return h
			},
			wantErrs: []string{"cannot find the cgroup mounts"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.host(t)
			c := SystemVerification(h, InstalledKubelet(h))
			if c.Name != "SystemVerification" {
				t.Errorf("name = %q", c.Name)
			}
			r := c.Run(context.Background())
			matchMessages(t, "warnings", r.Warnings, tt.wantWarns)
			matchMessages(t, "errors", r.Errors, tt.wantErrs)
			if tt.wantReport == nil {
				if r.Report != "" && len(tt.wantWarns)+len(tt.wantErrs) == 0 {
					t.Errorf("unexpected report:\n%s", r.Report)
				}
				return
			}
			if !strings.HasPrefix(r.Report, "[preflight] The system verification found problems") {
				t.Errorf("report does not start with its header:\n%s", r.Report)
			}
			lines := strings.Split(r.Report, "\n")
			for _, want := range tt.wantReport {
				found := false
				for _, l := range lines {
					found = found || l == want
				}
				if !found {
					t.Errorf("report lacks %q:\n%s", want, r.Report)
				}
			}
		})
	}
}
