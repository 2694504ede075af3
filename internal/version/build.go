package version

import (
	"fmt"
	"runtime"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// KubernetesVersion is the Kubernetes release this binary deploys by default.
// Default image tags and version-skew checks are derived from it.
const KubernetesVersion = "v1.37.2"

// These are set at link time with -ldflags -X; they describe this build of
// the tool itself, not the Kubernetes release it deploys.
var (
	projectVersion = "v0.1.0-dev"
	gitCommit      = ""
	buildDate      = "1970-01-01T00:00:00Z"
)

// Info describes this build. Its JSON shape matches the "clientVersion"
// object of upstream kubeadm so scripts reading gitVersion keep working; the
// extra fields name this implementation.
type Info struct {
	Major          string `json:"major"`
	Minor          string `json:"minor"`
	GitVersion     string `json:"gitVersion"`
	GitCommit      string `json:"gitCommit"`
	GitTreeState   string `json:"gitTreeState"`
	BuildDate      string `json:"buildDate"`
	GoVersion      string `json:"goVersion"`
	Compiler       string `json:"compiler"`
	Platform       string `json:"platform"`
	ProjectVersion string `json:"projectVersion"`
}

// Get returns the build information of the running binary.
func Get() Info {
	v := MustParse(KubernetesVersion)
	return Info{
		Major:          fmt.Sprint(v.Major()),
		Minor:          fmt.Sprint(v.Minor()),
		GitVersion:     KubernetesVersion,
		GitCommit:      gitCommit,
		GitTreeState:   "clean",
		BuildDate:      buildDate,
		GoVersion:      runtime.Version(),
		Compiler:       runtime.Compiler,
		Platform:       runtime.GOOS + "/" + runtime.GOARCH,
		ProjectVersion: projectVersion,
	}
}

// MustParse parses a version known at build time; it panics on a malformed one.
func MustParse(s string) *utilversion.Version {
	return utilversion.MustParseSemantic(s)
}
