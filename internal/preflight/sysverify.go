package preflight

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"

	"github.com/kubeadm-go/kubeadm/internal/boundedread"
)

// The oldest kernel kubeadm is tested with (the 4.19 LTS series); older
// ones only warn, as upstream kubeadm does.
const (
	minKernelMajor = 4
	minKernelMinor = 19
)

// failCgroupV1Since is the first kubelet release that refuses cgroup v1
// unless its configuration says failCgroupV1: false.
const failCgroupV1Since = "v1.35.0-0"

// kernelOption is a kernel configuration option the system verification
// looks for. An optional one only shows in the report.
type kernelOption struct {
	name     string
	optional string // what needs it, for optional options
}

// kernelOptions lists the options to check, in report order, for the
// given cgroup version.
func kernelOptions(cgroupV2 bool) []kernelOption {
	opts := []kernelOption{
		{name: "NAMESPACES"}, {name: "NET_NS"}, {name: "PID_NS"}, {name: "IPC_NS"}, {name: "UTS_NS"},
		{name: "CPUSETS"}, {name: "MEMCG"}, {name: "INET"}, {name: "EXT4_FS"}, {name: "PROC_FS"},
		{name: "NETFILTER_XT_TARGET_REDIRECT"}, {name: "NETFILTER_XT_MATCH_COMMENT"},
		{name: "FAIR_GROUP_SCHED"}, {name: "CGROUPS"},
	}
	if cgroupV2 {
		opts = append(opts, kernelOption{name: "CGROUP_BPF"})
	} else {
		opts = append(opts, kernelOption{name: "CGROUP_CPUACCT"}, kernelOption{name: "CGROUP_DEVICE"}, kernelOption{name: "CGROUP_FREEZER"})
	}
	return append(opts,
		kernelOption{name: "CGROUP_PIDS"}, kernelOption{name: "CGROUP_SCHED"},
		kernelOption{name: "OVERLAY_FS", optional: "overlayfs"},
		kernelOption{name: "AUFS_FS", optional: "aufs"},
		kernelOption{name: "BLK_DEV_DM", optional: "devicemapper"},
		kernelOption{name: "CFS_BANDWIDTH", optional: "CPU quotas"},
		kernelOption{name: "SECCOMP"},
		kernelOption{name: "SECCOMP_FILTER", optional: "seccomp filters"},
	)
}

// cgroupControllers lists the controllers to check, in report order;
// optional ones only warn when missing.
func cgroupControllers(cgroupV2 bool) (required, optional []string) {
	if cgroupV2 {
		return []string{"cpu", "cpuset", "devices", "freezer", "memory", "pids"}, []string{"hugetlb", "io"}
	}
	return []string{"cpu", "cpuacct", "cpuset", "devices", "freezer", "memory", "pids"}, []string{"hugetlb", "blkio"}
}

// kernelConfigPaths are where a kernel's configuration may be found.
func kernelConfigPaths(release string) []string {
	return []string{
		"/proc/config.gz",
		"/boot/config-" + release,
		"/usr/src/linux-" + release + "/.config",
		"/usr/src/linux/.config",
		"/usr/lib/modules/" + release + "/config",
		"/usr/lib/ostree-boot/config-" + release,
		"/usr/lib/kernel/config-" + release,
		"/usr/src/linux-headers-" + release + "/.config",
		"/lib/modules/" + release + "/build/.config",
	}
}

// verification collects the report lines and findings of one run.
type verification struct {
	h        Host
	lines    []string
	warnings []error
	errors   []error
}

func (v *verification) line(key, value string) {
	v.lines = append(v.lines, key+": "+value)
}

// SystemVerification checks the kernel (release and configuration), the
// operating system and the cgroup controllers, and whether the installed
// kubelet (whose version kubelet reports) accepts the machine's cgroup
// version. When it finds anything it prints its whole report. It reads
// only; unlike upstream kubeadm it loads no kernel module and creates no
// test cgroup.
func SystemVerification(h Host, kubeletVersion KubeletVersionFunc) Check {
	return Check{Name: "SystemVerification", Run: func(ctx context.Context) Result {
		kubelet, err := kubeletVersion(ctx)
		if err != nil {
			return Result{Errors: []error{err}}
		}
		v := &verification{h: h}
		release := v.kernelRelease()
		cgroupV2, cgroupErr := detectCgroupV2(h)
		v.kernelConfig(release, cgroupV2)
		v.line("OS", strings.ToUpper(runtime.GOOS[:1])+runtime.GOOS[1:])
		if runtime.GOOS != "linux" {
			v.errors = append(v.errors, fmt.Errorf("the operating system %q is not supported", runtime.GOOS))
		}
		if cgroupErr != nil {
			v.errors = append(v.errors, cgroupErr)
		} else {
			v.cgroups(release, cgroupV2)
			if !cgroupV2 {
				v.cgroupV1(kubelet)
			}
		}
		r := Result{Warnings: v.warnings, Errors: v.errors}
		if len(v.warnings)+len(v.errors) > 0 {
			r.Report = "[preflight] The system verification found problems; its full report follows:\n" + strings.Join(v.lines, "\n") + "\n"
		}
		return r
	}}
}

var kernelReleasePattern = regexp.MustCompile(`^(\d+)\.(\d+)`)

// kernelRelease reports the kernel release and warns when it is older
// than the kernels kubeadm is tested with.
func (v *verification) kernelRelease() string {
	release, err := v.h.KernelRelease()
	if err != nil {
		v.line("KERNEL_VERSION", "unknown")
		v.errors = append(v.errors, err)
		return ""
	}
	v.line("KERNEL_VERSION", release)
	m := kernelReleasePattern.FindStringSubmatch(release)
	if m == nil {
		v.warnings = append(v.warnings, fmt.Errorf("cannot read a version from the kernel release %q", release))
		return release
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	if major < minKernelMajor || (major == minKernelMajor && minor < minKernelMinor) {
		v.warnings = append(v.warnings, fmt.Errorf("the kernel %s is older than the kernels kubeadm is tested with "+
			"(%d.%d or newer, following the kernel.org long-term releases); some features may not work", release, minKernelMajor, minKernelMinor))
	}
	return release
}

// kernelAtLeast tells whether release is major.minor or newer.
func kernelAtLeast(release string, major, minor int) bool {
	m := kernelReleasePattern.FindStringSubmatch(release)
	if m == nil {
		return false
	}
	ma, _ := strconv.Atoi(m[1])
	mi, _ := strconv.Atoi(m[2])
	return ma > major || (ma == major && mi >= minor)
}

// kernelConfig reads the kernel configuration and checks the options.
func (v *verification) kernelConfig(release string, cgroupV2 bool) {
	cfg, err := readKernelConfig(v.h, release)
	if err != nil {
		v.errors = append(v.errors, err)
		return
	}
	var missing []string
	for _, o := range kernelOptions(cgroupV2) {
		key := "CONFIG_" + o.name
		switch val := cfg[key]; {
		case val == "y":
			v.line(key, "enabled")
		case val == "m":
			v.line(key, "enabled (as module)")
		case o.optional != "":
			v.line(key, "not set (needed for "+o.optional+")")
		default:
			v.line(key, "missing")
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		v.errors = append(v.errors, fmt.Errorf("the kernel lacks required options: %s", strings.Join(missing, ", ")))
	}
}

// readKernelConfig finds and parses the running kernel's configuration.
func readKernelConfig(h Host, release string) (map[string]string, error) {
	paths := kernelConfigPaths(release)
	for _, p := range paths {
		data, err := h.ReadFile(p)
		if err != nil {
			continue
		}
		if strings.HasSuffix(p, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				continue
			}
			data, err = boundedread.ReadAll(zr, boundedread.MaxFile, "the uncompressed "+p)
			if err != nil {
				continue
			}
		}
		return parseKernelConfig(data), nil
	}
	return nil, fmt.Errorf("cannot find the kernel configuration (looked in %s)", strings.Join(paths, ", "))
}

// parseKernelConfig reads "CONFIG_X=y" lines.
func parseKernelConfig(data []byte) map[string]string {
	cfg := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, val, ok := strings.Cut(line, "="); ok {
			cfg[k] = strings.Trim(val, `"`)
		}
	}
	return cfg
}

// detectCgroupV2 tells whether the unified (v2) hierarchy is mounted at
// /sys/fs/cgroup.
func detectCgroupV2(h Host) (bool, error) {
	data, err := h.ReadFile("/proc/mounts")
	if err != nil {
		return false, fmt.Errorf("cannot find the cgroup mounts: %w", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && f[1] == "/sys/fs/cgroup" && f[2] == "cgroup2" {
			return true, nil
		}
	}
	return false, nil
}

// cgroups reports the cgroup controllers.
func (v *verification) cgroups(release string, cgroupV2 bool) {
	var have map[string]bool
	var err error
	if cgroupV2 {
		have, err = cgroupV2Controllers(v.h, release)
	} else {
		have, err = cgroupV1Controllers(v.h)
	}
	if err != nil {
		v.errors = append(v.errors, err)
		return
	}
	required, optional := cgroupControllers(cgroupV2)
	var missingReq, missingOpt []string
	for _, c := range required {
		v.line("CGROUPS_"+strings.ToUpper(c), presence(have[c]))
		if !have[c] {
			missingReq = append(missingReq, c)
		}
	}
	for _, c := range optional {
		v.line("CGROUPS_"+strings.ToUpper(c), presence(have[c]))
		if !have[c] {
			missingOpt = append(missingOpt, c)
		}
	}
	if len(missingReq) > 0 {
		v.errors = append(v.errors, fmt.Errorf("required cgroup controllers are missing: %s", strings.Join(missingReq, ", ")))
	}
	if len(missingOpt) > 0 {
		v.warnings = append(v.warnings, fmt.Errorf("optional cgroup controllers are missing: %s", strings.Join(missingOpt, ", ")))
	}
}

func presence(ok bool) string {
	if ok {
		return "enabled"
	}
	return "missing"
}

// cgroupV1Controllers reads the enabled controllers from /proc/cgroups.
func cgroupV1Controllers(h Host) (map[string]bool, error) {
	data, err := h.ReadFile("/proc/cgroups")
	if err != nil {
		return nil, fmt.Errorf("cannot read the cgroup controllers: %w", err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) == 4 && !strings.HasPrefix(f[0], "#") && f[3] == "1" {
			have[f[0]] = true
		}
	}
	return have, nil
}

// cgroupV2Controllers reads the root's controllers. The devices controller
// is always there on v2 (it is eBPF based); the freezer is there when the
// process's own cgroup has a cgroup.freeze file or, for a process in the
// root cgroup, when the kernel is 5.2 or newer.
func cgroupV2Controllers(h Host, release string) (map[string]bool, error) {
	data, err := h.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	if err != nil {
		return nil, fmt.Errorf("cannot read the cgroup controllers: %w", err)
	}
	have := map[string]bool{"devices": true}
	for _, c := range strings.Fields(string(data)) {
		have[c] = true
	}
	have["freezer"] = cgroupV2Freezer(h, release)
	return have, nil
}

func cgroupV2Freezer(h Host, release string) bool {
	if data, err := h.ReadFile("/proc/self/cgroup"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if p, ok := strings.CutPrefix(l, "0::"); ok && p != "/" && p != "" {
				_, err := h.Stat("/sys/fs/cgroup" + p + "/cgroup.freeze")
				return err == nil
			}
		}
	}
	return kernelAtLeast(release, 5, 2)
}

// cgroupV1 reports that cgroup v1 is on its way out: an error for kubelets
// that refuse it by default, a warning for older ones.
func (v *verification) cgroupV1(kubelet *utilversion.Version) {
	err := fmt.Errorf("this machine uses cgroup v1, which Kubernetes is dropping; move to cgroup v2. " +
		"Kubelets from v1.35 on refuse cgroup v1 unless their configuration sets failCgroupV1: false, " +
		"and even then this check must be ignored explicitly " +
		"(see https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1)")
	if kubelet.AtLeast(utilversion.MustParseSemantic(failCgroupV1Since)) {
		v.errors = append(v.errors, err)
		return
	}
	v.warnings = append(v.warnings, err)
}
