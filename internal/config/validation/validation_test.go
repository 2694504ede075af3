package validation

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

const (
	goodToken   = "abcdef.0123456789abcdef"
	goodCertKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func goodNodeRegistration() kubeadm.NodeRegistrationOptions {
	yes := true
	return kubeadm.NodeRegistrationOptions{
		Name:            "node-1",
		CRISocket:       v1beta4.DefaultCRISocket,
		ImagePullPolicy: corev1.PullIfNotPresent,
		ImagePullSerial: &yes,
	}
}

func goodCluster() kubeadm.ClusterConfiguration {
	return kubeadm.ClusterConfiguration{
		Etcd:                        kubeadm.Etcd{Local: &kubeadm.LocalEtcd{DataDir: v1beta4.DefaultEtcdDataDir}},
		Networking:                  kubeadm.Networking{ServiceSubnet: v1beta4.DefaultServiceSubnet, DNSDomain: v1beta4.DefaultDNSDomain},
		KubernetesVersion:           "v1.36.3",
		CertificatesDir:             v1beta4.DefaultCertificatesDir,
		ImageRepository:             v1beta4.DefaultImageRepository,
		ClusterName:                 v1beta4.DefaultClusterName,
		EncryptionAlgorithm:         v1beta4.DefaultEncryptionAlgorithm,
		CertificateValidityPeriod:   dur(v1beta4.DefaultCertificateValidityPeriod),
		CACertificateValidityPeriod: dur(v1beta4.DefaultCACertificateValidityPeriod),
	}
}

func goodInit() *kubeadm.InitConfiguration {
	tok, _ := v1beta4.ParseBootstrapTokenString(goodToken)
	return &kubeadm.InitConfiguration{
		ClusterConfiguration: goodCluster(),
		BootstrapTokens: []kubeadm.BootstrapToken{{
			Token:  tok,
			TTL:    dur(v1beta4.DefaultTokenTTL),
			Usages: v1beta4.DefaultTokenUsages(),
			Groups: []string{v1beta4.DefaultTokenGroup},
		}},
		NodeRegistration: goodNodeRegistration(),
		LocalAPIEndpoint: kubeadm.APIEndpoint{AdvertiseAddress: "192.0.2.2", BindPort: 6443},
	}
}

func goodJoin() *kubeadm.JoinConfiguration {
	return &kubeadm.JoinConfiguration{
		NodeRegistration: goodNodeRegistration(),
		CACertPath:       v1beta4.DefaultCACertPath,
		Discovery: kubeadm.Discovery{
			BootstrapToken: &kubeadm.BootstrapTokenDiscovery{
				Token:             goodToken,
				APIServerEndpoint: "192.0.2.2:6443",
				CACertHashes:      []string{"sha256:" + goodCertKey},
			},
			TLSBootstrapToken: goodToken,
		},
	}
}

func goodReset() *kubeadm.ResetConfiguration {
	return &kubeadm.ResetConfiguration{CertificatesDir: v1beta4.DefaultCertificatesDir, CRISocket: v1beta4.DefaultCRISocket}
}

func goodUpgrade() *kubeadm.UpgradeConfiguration {
	c := &kubeadm.UpgradeConfiguration{}
	c.Apply.ImagePullPolicy = corev1.PullIfNotPresent
	c.Node.ImagePullPolicy = corev1.PullIfNotPresent
	return c
}

// want is one expected error: its type and field path.
type want struct {
	typ  field.ErrorType
	path string
}

func inv(path string) want { return want{field.ErrorTypeInvalid, path} }

func checkErrors(t *testing.T, got field.ErrorList, wants []want) {
	t.Helper()
	var g []want
	for _, e := range got {
		g = append(g, want{e.Type, e.Field})
	}
	if len(g) == 0 && len(wants) == 0 {
		return
	}
	if !reflect.DeepEqual(g, wants) {
		t.Errorf("errors:\n got  %v\n want %v\n full: %v", g, wants, got)
	}
}

func TestValidDefaultsPass(t *testing.T) {
	checkErrors(t, ValidateInitConfiguration(goodInit()), nil)
	c := goodCluster()
	checkErrors(t, ValidateClusterConfiguration(&c), nil)
	checkErrors(t, ValidateJoinConfiguration(goodJoin()), nil)
	checkErrors(t, ValidateResetConfiguration(goodReset()), nil)
	checkErrors(t, ValidateUpgradeConfiguration(goodUpgrade()), nil)
}

func TestInitConfiguration(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *kubeadm.InitConfiguration)
		want   []want
	}{
		// node registration
		{"node name not a subdomain", func(c *kubeadm.InitConfiguration) { c.NodeRegistration.Name = "foo_bar" }, []want{inv("nodeRegistration.name")}},
		{"node name is lowercased first", func(c *kubeadm.InitConfiguration) { c.NodeRegistration.Name = "Node-1" }, nil},
		{"cri socket not a URL", func(c *kubeadm.InitConfiguration) { c.NodeRegistration.CRISocket = "unix://%zz" }, []want{inv("nodeRegistration.criSocket")}},
		{"cri socket without scheme", func(c *kubeadm.InitConfiguration) { c.NodeRegistration.CRISocket = "unix" }, []want{inv("nodeRegistration.criSocket")}},
		{"cri socket with other scheme", func(c *kubeadm.InitConfiguration) { c.NodeRegistration.CRISocket = "unixy://x" }, []want{inv("nodeRegistration.criSocket")}},
		{"cri socket opaque unix URL", func(c *kubeadm.InitConfiguration) { c.NodeRegistration.CRISocket = "unix:x" }, nil},
		{"kubelet arg without name", func(c *kubeadm.InitConfiguration) {
			c.NodeRegistration.KubeletExtraArgs = []kubeadm.Arg{{Name: "v", Value: "1"}, {Name: "v", Value: "2"}, {Value: "x"}}
		}, []want{inv("nodeRegistration.kubeletExtraArgs")}},
		{"pull policy", func(c *kubeadm.InitConfiguration) { c.NodeRegistration.ImagePullPolicy = "always" }, []want{inv("nodeRegistration.imagePullPolicy")}},
		{"taints are validated (stricter than upstream)", func(c *kubeadm.InitConfiguration) {
			c.NodeRegistration.Taints = []corev1.Taint{{Key: "bad key!", Effect: "Bad"}, {Key: "a", Effect: "NoSchedule"}, {Key: "a", Effect: "NoSchedule"}}
		}, []want{inv("nodeRegistration.taints[0].key"), {field.ErrorTypeNotSupported, "nodeRegistration.taints[0].effect"}, {field.ErrorTypeDuplicate, "nodeRegistration.taints[2]"}}},
		{"ignorePreflightErrors mix is not validated here", func(c *kubeadm.InitConfiguration) {
			c.NodeRegistration.IgnorePreflightErrors = []string{"all", "Swap"}
		}, nil},

		// bootstrap tokens
		{"token usage unknown", func(c *kubeadm.InitConfiguration) {
			c.BootstrapTokens[0].Usages = []string{"signing", "authentication", "foo"}
		}, []want{inv("bootstrapTokens.0.usages")}},
		{"token groups without authentication", func(c *kubeadm.InitConfiguration) { c.BootstrapTokens[0].Usages = []string{"signing"} }, []want{inv("bootstrapTokens.0.groups")}},
		{"token group pattern", func(c *kubeadm.InitConfiguration) {
			c.BootstrapTokens[0].Groups = []string{"system:bootstrappers:ok", "bad", "system:bootstrappers:Foo"}
		}, []want{inv("bootstrapTokens.0.groups"), inv("bootstrapTokens.0.groups")}},
		{"token ttl and expires", func(c *kubeadm.InitConfiguration) {
			c.BootstrapTokens[0].Expires = &metav1.Time{Time: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
		}, []want{inv("bootstrapTokens.0")}},
		{"token negative ttl accepted", func(c *kubeadm.InitConfiguration) { c.BootstrapTokens[0].TTL = dur(-time.Hour) }, nil},
		{"token malformed", func(c *kubeadm.InitConfiguration) {
			c.BootstrapTokens[0].Token = &kubeadm.BootstrapTokenString{ID: "ABCDEF", Secret: "0123456789abcdef"}
		}, []want{inv("bootstrapTokens.0.token")}},
		{"second token indexed", func(c *kubeadm.InitConfiguration) {
			c.BootstrapTokens = append(c.BootstrapTokens, c.BootstrapTokens[0])
			c.BootstrapTokens[1].Usages = []string{"bogus", "authentication"}
		}, []want{inv("bootstrapTokens.1.usages")}},

		// API endpoint
		{"advertise address", func(c *kubeadm.InitConfiguration) { c.LocalAPIEndpoint.AdvertiseAddress = "1.2.3" }, []want{inv("localAPIEndpoint.advertiseAddress")}},
		{"advertise address left for later", func(c *kubeadm.InitConfiguration) { c.LocalAPIEndpoint.AdvertiseAddress = "" }, nil},
		{"cri socket left for later", func(c *kubeadm.InitConfiguration) { c.NodeRegistration.CRISocket = "" }, nil},
		{"advertise address leading zeros", func(c *kubeadm.InitConfiguration) { c.LocalAPIEndpoint.AdvertiseAddress = "01.2.3.4" }, nil},
		{"advertise address IPv6", func(c *kubeadm.InitConfiguration) { c.LocalAPIEndpoint.AdvertiseAddress = "fd00::1" }, nil},
		{"bind port too big", func(c *kubeadm.InitConfiguration) { c.LocalAPIEndpoint.BindPort = 70000 }, []want{inv("localAPIEndpoint.bindPort")}},
		{"bind port negative", func(c *kubeadm.InitConfiguration) { c.LocalAPIEndpoint.BindPort = -1 }, []want{inv("localAPIEndpoint.bindPort")}},

		// certificate key
		{"certificate key odd hex", func(c *kubeadm.InitConfiguration) { c.CertificateKey = "abc" }, []want{inv("certificateKey")}},
		{"certificate key short", func(c *kubeadm.InitConfiguration) { c.CertificateKey = goodCertKey[:32] }, []want{inv("certificateKey")}},
		{"certificate key uppercase hex", func(c *kubeadm.InitConfiguration) { c.CertificateKey = strings.ToUpper(goodCertKey) }, nil},

		// the cluster part is validated too, after init's own fields
		{"cluster errors come between", func(c *kubeadm.InitConfiguration) {
			c.NodeRegistration.Name = "-"
			c.CertificatesDir = "rel"
			c.LocalAPIEndpoint.BindPort = 0
		}, []want{inv("nodeRegistration.name"), inv("certificatesDir"), inv("localAPIEndpoint.bindPort")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goodInit()
			tc.mutate(c)
			checkErrors(t, ValidateInitConfiguration(c), tc.want)
		})
	}
}

func TestClusterConfiguration(t *testing.T) {
	cmArgs := func(args ...string) []kubeadm.Arg {
		var out []kubeadm.Arg
		for i := 0; i < len(args); i += 2 {
			out = append(out, kubeadm.Arg{Name: args[i], Value: args[i+1]})
		}
		return out
	}
	cases := []struct {
		name   string
		mutate func(c *kubeadm.ClusterConfiguration)
		want   []want
	}{
		// networking: service subnet
		{"service subnet unparsable", func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "foo" }, []want{inv("networking.serviceSubnet")}},
		{"service subnet with space", func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "10.96.0.0/12, fd00::/112" }, []want{inv("networking.serviceSubnet")}},
		{"service subnet trailing comma", func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "10.96.0.0/12," }, []want{inv("networking.serviceSubnet")}},
		{"service subnet IPv4 too large", func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "10.96.0.0/11" }, []want{inv("networking.serviceSubnet")}},
		{"service subnet IPv4 /28 ok", func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "10.96.0.0/28" }, nil},
		{"service subnet IPv4 too small", func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "10.96.0.0/29" }, []want{inv("networking.serviceSubnet")}},
		{"service subnet IPv6 /108 ok", func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "fd00::/108" }, nil},
		{"service subnet IPv6 too large", func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "fd00::/107" }, []want{inv("networking.serviceSubnet")}},
		{"service subnet IPv6 too small", func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "fd00::/125" }, []want{inv("networking.serviceSubnet")}},
		{"service subnet dual-stack", func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "fd00::/112,10.96.0.0/12" }, nil},
		{"service subnet two IPv4", func(c *kubeadm.ClusterConfiguration) { c.Networking.ServiceSubnet = "10.96.0.0/12,10.97.0.0/16" }, []want{inv("networking.serviceSubnet")}},
		{"service subnet three entries, sizes still checked", func(c *kubeadm.ClusterConfiguration) {
			c.Networking.ServiceSubnet = "10.96.0.0/12,fd00::/112,fd01::/64"
		}, []want{inv("networking.serviceSubnet"), inv("networking.serviceSubnet")}},

		// networking: pod subnet
		{"pod subnet unparsable", func(c *kubeadm.ClusterConfiguration) { c.Networking.PodSubnet = "bar" }, []want{inv("networking.podSubnet")}},
		{"pod subnet ok", func(c *kubeadm.ClusterConfiguration) { c.Networking.PodSubnet = "10.244.0.0/16,fd00:1::/56" }, nil},
		{"pod subnet smaller than node range", func(c *kubeadm.ClusterConfiguration) { c.Networking.PodSubnet = "10.244.0.0/25" }, []want{inv("networking.podSubnet")}},
		{"pod subnet too many node ranges", func(c *kubeadm.ClusterConfiguration) { c.Networking.PodSubnet = "100.0.0.0/7" }, []want{inv("networking.podSubnet")}},
		{"pod subnet /8 is the limit", func(c *kubeadm.ClusterConfiguration) { c.Networking.PodSubnet = "100.0.0.0/8" }, nil},
		{"pod subnet IPv6 smaller than node range", func(c *kubeadm.ClusterConfiguration) { c.Networking.PodSubnet = "fd00::/65" }, []want{inv("networking.podSubnet")}},
		{"pod subnet too small and smaller than node range", func(c *kubeadm.ClusterConfiguration) { c.Networking.PodSubnet = "10.244.0.0/30" }, []want{inv("networking.podSubnet"), inv("networking.podSubnet")}},
		{"pod subnet two IPv4", func(c *kubeadm.ClusterConfiguration) { c.Networking.PodSubnet = "10.244.0.0/16,10.1.0.0/16" }, []want{inv("networking.podSubnet")}},
		{"pod subnet honours node-cidr-mask-size-ipv4, last wins", func(c *kubeadm.ClusterConfiguration) {
			c.Networking.PodSubnet = "10.0.0.0/28"
			c.ControllerManager.ExtraArgs = cmArgs("node-cidr-mask-size-ipv4", "8", "node-cidr-mask-size-ipv4", "30")
		}, nil},
		{"pod subnet ignores node-cidr-mask-size", func(c *kubeadm.ClusterConfiguration) {
			c.Networking.PodSubnet = "10.244.0.0/16"
			c.ControllerManager.ExtraArgs = cmArgs("node-cidr-mask-size", "8")
		}, nil},
		{"pod subnet empty mask flag means default", func(c *kubeadm.ClusterConfiguration) {
			c.Networking.PodSubnet = "10.244.0.0/25"
			c.ControllerManager.ExtraArgs = cmArgs("node-cidr-mask-size-ipv4", "26", "node-cidr-mask-size-ipv4", "")
		}, []want{inv("networking.podSubnet")}},
		{"pod subnet unparsable mask flag", func(c *kubeadm.ClusterConfiguration) {
			c.Networking.PodSubnet = "10.244.0.0/16,fd00::/48"
			c.ControllerManager.ExtraArgs = cmArgs("node-cidr-mask-size-ipv6", "xyz")
		}, []want{inv("networking.podSubnet")}},
		// Overlaps are accepted as upstream accepts them (and only warned
		// about): Kubernetes' own dual-stack example nests the IPv6 ranges.
		{"pod and service overlap is accepted", func(c *kubeadm.ClusterConfiguration) { c.Networking.PodSubnet = "10.96.0.0/16" }, nil},
		{"Kubernetes' dual-stack example", func(c *kubeadm.ClusterConfiguration) {
			c.Networking.PodSubnet = "10.244.0.0/16,2001:db8:42:0::/56"
			c.Networking.ServiceSubnet = "10.96.0.0/16,2001:db8:42:1::/112"
		}, nil},

		{"dns domain", func(c *kubeadm.ClusterConfiguration) { c.Networking.DNSDomain = "Cluster.Local" }, []want{inv("networking.dnsDomain")}},
		{"dns domain trailing dot", func(c *kubeadm.ClusterConfiguration) { c.Networking.DNSDomain = "cluster.local." }, []want{inv("networking.dnsDomain")}},

		// control plane endpoint and version
		{"control plane endpoint host only", func(c *kubeadm.ClusterConfiguration) { c.ControlPlaneEndpoint = "lb.example.com" }, nil},
		{"control plane endpoint bad port", func(c *kubeadm.ClusterConfiguration) { c.ControlPlaneEndpoint = "lb:0" }, []want{inv("controlPlaneEndpoint")}},
		{"control plane endpoint bad host", func(c *kubeadm.ClusterConfiguration) { c.ControlPlaneEndpoint = "LB:6443" }, []want{inv("controlPlaneEndpoint")}},
		{"kubernetes version not semver", func(c *kubeadm.ClusterConfiguration) { c.KubernetesVersion = "v1.36" }, []want{inv("kubernetesVersion")}},
		{"kubernetes version too old", func(c *kubeadm.ClusterConfiguration) { c.KubernetesVersion = "v1.35.0-rc.1" }, []want{inv("kubernetesVersion")}},
		{"kubernetes version newer is fine", func(c *kubeadm.ClusterConfiguration) { c.KubernetesVersion = "v1.38.0" }, nil},
		{"kubernetes version CI", func(c *kubeadm.ClusterConfiguration) { c.KubernetesVersion = "ci/v1.37.0-alpha.1.123+abcdef" }, nil},

		// SANs
		{"cert SANs", func(c *kubeadm.ClusterConfiguration) {
			c.APIServer.CertSANs = []string{"foo", "*.foo.com", "1.2.3.4", "::1", "Foo", "foo_bar", "*", "a.*.b", ""}
		}, []want{inv("apiServer.certSANs"), inv("apiServer.certSANs"), inv("apiServer.certSANs"), inv("apiServer.certSANs")}},
		{"etcd SANs", func(c *kubeadm.ClusterConfiguration) {
			c.Etcd.Local.ServerCertSANs = []string{"bad_1", "*.ok.com"}
			c.Etcd.Local.PeerCertSANs = []string{"bad_2", "01.2.3.4"}
		}, []want{inv("etcd.local.serverCertSANs"), inv("etcd.local.peerCertSANs")}},

		// extra args of the components
		{"component args without name", func(c *kubeadm.ClusterConfiguration) {
			c.APIServer.ExtraArgs = []kubeadm.Arg{{Name: "a", Value: "1"}, {Name: "a", Value: "2"}, {Value: "x"}}
			c.ControllerManager.ExtraArgs = []kubeadm.Arg{{}}
			c.Scheduler.ExtraArgs = []kubeadm.Arg{{}}
			c.Etcd.Local.ExtraArgs = []kubeadm.Arg{{}}
		}, []want{inv("apiServer.extraArgs"), inv("controllerManager.extraArgs"), inv("scheduler.extraArgs"), inv("etcd.local.extraArgs")}},
		{"extra envs and volumes are not validated", func(c *kubeadm.ClusterConfiguration) {
			c.APIServer.ExtraEnvs = []kubeadm.EnvVar{{EnvVar: corev1.EnvVar{Name: "1 BAD"}}}
			c.APIServer.ExtraVolumes = []kubeadm.HostPathMount{{PathType: "Bogus", HostPath: "rel"}}
		}, nil},

		// paths, algorithms, gates, images
		{"certificates dir", func(c *kubeadm.ClusterConfiguration) { c.CertificatesDir = "rel" }, []want{inv("certificatesDir")}},
		{"encryption algorithm", func(c *kubeadm.ClusterConfiguration) { c.EncryptionAlgorithm = "RSA-1024" }, []want{{field.ErrorTypeNotSupported, "encryptionAlgorithm"}}},
		{"encryption algorithm ECDSA-P384", func(c *kubeadm.ClusterConfiguration) { c.EncryptionAlgorithm = "ECDSA-P384" }, nil},
		{"feature gates unknown", func(c *kubeadm.ClusterConfiguration) {
			c.FeatureGates = map[string]bool{"Zed": true, "Foo": false}
		}, []want{inv("featureGates"), inv("featureGates")}},
		{"feature gates removed in v1.37", func(c *kubeadm.ClusterConfiguration) {
			c.FeatureGates = map[string]bool{"PublicKeysECDSA": true, "NodeLocalCRISocket": true}
		}, []want{inv("featureGates"), inv("featureGates")}},
		{"feature gates known", func(c *kubeadm.ClusterConfiguration) {
			c.FeatureGates = map[string]bool{"RootlessControlPlane": true, "NodeLocalAPILoadBalancer": true, "CISHardening": false}
		}, nil},
		{"CIS hardening alone", func(c *kubeadm.ClusterConfiguration) { c.FeatureGates = map[string]bool{"CISHardening": true} }, nil},
		{"CIS hardening with a rootless control plane", func(c *kubeadm.ClusterConfiguration) {
			c.FeatureGates = map[string]bool{"CISHardening": true, "RootlessControlPlane": true}
		}, []want{inv("featureGates")}},
		{"host processes alone", func(c *kubeadm.ClusterConfiguration) {
			c.FeatureGates = map[string]bool{"HostProcessControlPlane": true}
		}, nil},
		{"host processes with CIS hardening", func(c *kubeadm.ClusterConfiguration) {
			c.FeatureGates = map[string]bool{"HostProcessControlPlane": true, "CISHardening": true}
		}, []want{inv("featureGates")}},
		{"host processes with a rootless control plane", func(c *kubeadm.ClusterConfiguration) {
			c.FeatureGates = map[string]bool{"HostProcessControlPlane": true, "RootlessControlPlane": true}
		}, []want{inv("featureGates")}},
		{"feature gates are case-sensitive", func(c *kubeadm.ClusterConfiguration) { c.FeatureGates = map[string]bool{"rootlesscontrolplane": true} }, []want{inv("featureGates")}},
		{"image repository", func(c *kubeadm.ClusterConfiguration) { c.ImageRepository = "registry.io/Foo" }, []want{inv("imageRepository")}},
		{"dns image repository", func(c *kubeadm.ClusterConfiguration) { c.DNS.ImageRepository = "::" }, []want{inv("dns.imageRepository")}},
		{"etcd image repository", func(c *kubeadm.ClusterConfiguration) { c.Etcd.Local.ImageRepository = "x y" }, []want{inv("etcd.local.imageRepository")}},
		{"validity periods only warn", func(c *kubeadm.ClusterConfiguration) {
			c.CertificateValidityPeriod = dur(100000 * time.Hour)
			c.CACertificateValidityPeriod = dur(-time.Hour)
		}, nil},

		// etcd
		{"etcd local and external", func(c *kubeadm.ClusterConfiguration) {
			c.Etcd.Local.DataDir = "rel"
			c.Etcd.External = &kubeadm.ExternalEtcd{}
		}, []want{inv("etcd")}},
		{"etcd data dir", func(c *kubeadm.ClusterConfiguration) { c.Etcd.Local.DataDir = "rel" }, []want{inv("etcd.local.dataDir")}},
		{"external etcd without endpoints", func(c *kubeadm.ClusterConfiguration) { c.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{}} }, []want{inv("etcd.external.endpoints")}},
		{"external etcd plain http without TLS files", func(c *kubeadm.ClusterConfiguration) {
			c.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{Endpoints: []string{"http://1.2.3.4:2379", "ftp://x"}}}
		}, nil},
		{"external etcd endpoints", func(c *kubeadm.ClusterConfiguration) {
			c.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{
				Endpoints:     []string{"foo", "1.2.3.4:2379", "https://x:2379"},
				HTTPEndpoints: []string{"bar", "http://1.2.3.4:2381"},
			}}
		}, []want{inv("etcd.external.endpoints"), inv("etcd.external.endpoints"), inv("etcd.external.httpEndpoints")}},
		{"external etcd TLS needs https", func(c *kubeadm.ClusterConfiguration) {
			c.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{
				Endpoints: []string{"foo", "http://x"}, HTTPEndpoints: []string{"http://x"}, CAFile: "/ca",
			}}
		}, []want{inv("etcd.external.endpoints"), inv("etcd.external.endpoints"), inv("etcd.external.endpoints")}},
		{"external etcd cert without key", func(c *kubeadm.ClusterConfiguration) {
			c.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{Endpoints: []string{"https://x"}, CAFile: "/ca", CertFile: "/c"}}
		}, []want{inv("etcd.external")}},
		{"external etcd cert and key need CA", func(c *kubeadm.ClusterConfiguration) {
			c.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{Endpoints: []string{"https://x"}, CertFile: "/c", KeyFile: "/k"}}
		}, []want{inv("etcd.external")}},
		{"external etcd relative files", func(c *kubeadm.ClusterConfiguration) {
			c.Etcd = kubeadm.Etcd{External: &kubeadm.ExternalEtcd{Endpoints: []string{"https://x"}, CAFile: "ca", CertFile: "c", KeyFile: "k"}}
		}, []want{inv("etcd.external.caFile"), inv("etcd.external.certFile"), inv("etcd.external.keyFile")}},

		// order of a mix, as the reference reports it
		{"order", func(c *kubeadm.ClusterConfiguration) {
			c.EncryptionAlgorithm = "x"
			c.Etcd.Local.DataDir = "rel"
			c.ImageRepository = "Bad_"
			c.FeatureGates = map[string]bool{"Foo": true}
			c.CertificatesDir = "rel"
			c.Scheduler.ExtraArgs = []kubeadm.Arg{{}}
			c.APIServer.CertSANs = []string{"bad_"}
			c.Networking.PodSubnet = "bar"
			c.Networking.ServiceSubnet = "foo"
			c.Networking.DNSDomain = "Bad"
			c.DNS.ImageRepository = "Bad_"
		}, []want{
			inv("dns.imageRepository"), inv("networking.dnsDomain"), inv("networking.serviceSubnet"), inv("networking.podSubnet"),
			inv("apiServer.certSANs"), inv("scheduler.extraArgs"), inv("certificatesDir"), inv("featureGates"),
			inv("imageRepository"), inv("etcd.local.dataDir"), {field.ErrorTypeNotSupported, "encryptionAlgorithm"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goodCluster()
			tc.mutate(&c)
			c.Endpoint = kubeadm.ParseEndpoint(c.ControlPlaneEndpoint) // as defaulting does
			checkErrors(t, ValidateClusterConfiguration(&c), tc.want)
		})
	}
}

func TestSubnetErrorValues(t *testing.T) {
	c := goodCluster()
	c.Networking.ServiceSubnet = "10.96.0.0/8"
	c.Networking.PodSubnet = "200.0.0.0/4"
	errs := ValidateClusterConfiguration(&c)
	if len(errs) != 2 || errs[0].BadValue != "10.0.0.0/8" || errs[1].BadValue != "192.0.0.0/4" {
		t.Fatalf("the masked network should be reported: %v", errs)
	}
}

func TestImageRepository(t *testing.T) {
	good := []string{"registry.k8s.io", "registry.k8s.io/foo", "localhost:5000", "localhost:5000/a/b", "Registry.io", "REG",
		"a_b", "a__b", "a-b", "a--b", "a.b", "1.2.3.4:5000/x", "[::1]:5000/x", "[::1]", "x:0/a", "xn--b.c/d", "a.b-c_d__e"}
	bad := []string{"registry.io/Foo", "a___b", "a..b", "-a", "a/", "/a", "a//b", "a:b", "a:5000:1", "foo:bar/x", "x.io:",
		"a b", "a@sha", "a.io/b:tag", "Reg_x", "a-", "a.", "_a", "a_", "a/-b", "a/b.", "[zz]:5000/x", "localhost:/x"}
	for _, r := range good {
		if errs := validateImageRepository(r, field.NewPath("imageRepository")); len(errs) != 0 {
			t.Errorf("%q refused: %v", r, errs)
		}
	}
	for _, r := range bad {
		if errs := validateImageRepository(r, field.NewPath("imageRepository")); len(errs) != 1 {
			t.Errorf("%q accepted", r)
		}
	}
}

func TestJoinConfiguration(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fileOnly := func(c *kubeadm.JoinConfiguration, path string) {
		c.Discovery = kubeadm.Discovery{File: &kubeadm.FileDiscovery{KubeConfigPath: path}}
	}
	cases := []struct {
		name   string
		mutate func(c *kubeadm.JoinConfiguration)
		want   []want
	}{
		{"no discovery", func(c *kubeadm.JoinConfiguration) { c.Discovery = kubeadm.Discovery{TLSBootstrapToken: "bad"} }, []want{inv("discovery")}},
		{"both discovery methods", func(c *kubeadm.JoinConfiguration) {
			c.Discovery.BootstrapToken.Token = "bad"
			c.Discovery.File = &kubeadm.FileDiscovery{KubeConfigPath: "rel"}
			c.Discovery.TLSBootstrapToken = "bad"
		}, []want{inv("discovery"), inv("discovery.bootstrapToken.token"), inv("discovery.tlsBootstrapToken"), inv("discovery.file.kubeConfigPath")}},
		{"bootstrap token everything missing", func(c *kubeadm.JoinConfiguration) {
			c.Discovery.BootstrapToken = &kubeadm.BootstrapTokenDiscovery{}
			c.Discovery.TLSBootstrapToken = ""
		}, []want{
			{field.ErrorTypeRequired, "discovery.bootstrapToken"}, inv("discovery.bootstrapToken.caCertHashes"),
			inv("discovery.bootstrapToken.token"), inv("discovery.bootstrapToken.apiServerEndpoint"), inv("discovery.tlsBootstrapToken"),
		}},
		{"unsafe skip CA verification", func(c *kubeadm.JoinConfiguration) {
			c.Discovery.BootstrapToken.CACertHashes = nil
			c.Discovery.BootstrapToken.UnsafeSkipCAVerification = true
		}, nil},
		{"hash format is not checked here", func(c *kubeadm.JoinConfiguration) { c.Discovery.BootstrapToken.CACertHashes = []string{"foo", "md5:x"} }, nil},
		{"api server endpoint without port", func(c *kubeadm.JoinConfiguration) { c.Discovery.BootstrapToken.APIServerEndpoint = "1.2.3.4" }, []want{inv("discovery.bootstrapToken.apiServerEndpoint")}},
		{"api server endpoint unbracketed IPv6", func(c *kubeadm.JoinConfiguration) { c.Discovery.BootstrapToken.APIServerEndpoint = "::1:6443" }, []want{inv("discovery.bootstrapToken.apiServerEndpoint")}},
		{"api server endpoint port not checked", func(c *kubeadm.JoinConfiguration) { c.Discovery.BootstrapToken.APIServerEndpoint = "Foo_Bar:abc" }, nil},
		{"tls bootstrap token", func(c *kubeadm.JoinConfiguration) { c.Discovery.TLSBootstrapToken = "abcdef.0123456789ABCDEF" }, []want{inv("discovery.tlsBootstrapToken")}},
		{"file discovery existing file", func(c *kubeadm.JoinConfiguration) { fileOnly(c, kubeconfig) }, nil},
		{"file discovery https URL", func(c *kubeadm.JoinConfiguration) { fileOnly(c, "https://example.com/kubeconfig") }, nil},
		{"file discovery http URL", func(c *kubeadm.JoinConfiguration) { fileOnly(c, "http://example.com/kubeconfig") }, []want{inv("discovery.file.kubeConfigPath")}},
		{"file discovery missing file", func(c *kubeadm.JoinConfiguration) { fileOnly(c, filepath.Join(dir, "nope")) }, []want{inv("discovery.file.kubeConfigPath")}},
		{"file discovery empty path", func(c *kubeadm.JoinConfiguration) { fileOnly(c, "") }, []want{inv("discovery.file.kubeConfigPath")}},
		{"file discovery then tls token", func(c *kubeadm.JoinConfiguration) {
			fileOnly(c, "rel/nope")
			c.Discovery.TLSBootstrapToken = "bad"
		}, []want{inv("discovery.file.kubeConfigPath"), inv("discovery.tlsBootstrapToken")}},
		{"control plane", func(c *kubeadm.JoinConfiguration) {
			c.ControlPlane = &kubeadm.JoinControlPlane{
				LocalAPIEndpoint: kubeadm.APIEndpoint{AdvertiseAddress: "192.0.2.3", BindPort: -1},
				CertificateKey:   "abc",
			}
		}, []want{inv("controlPlane.localAPIEndpoint.bindPort"), inv("controlPlane.certificateKey")}},
		{"control plane good", func(c *kubeadm.JoinConfiguration) {
			c.ControlPlane = &kubeadm.JoinControlPlane{LocalAPIEndpoint: kubeadm.APIEndpoint{AdvertiseAddress: "192.0.2.3", BindPort: 6443}, CertificateKey: goodCertKey}
		}, nil},
		{"ca cert path", func(c *kubeadm.JoinConfiguration) { c.CACertPath = "relative/ca.crt" }, []want{inv("caCertPath")}},
		{"order", func(c *kubeadm.JoinConfiguration) {
			c.CACertPath = "rel"
			c.NodeRegistration.ImagePullPolicy = "x"
			c.NodeRegistration.Name = "Bad_"
			c.Discovery.TLSBootstrapToken = "bad"
		}, []want{inv("discovery.tlsBootstrapToken"), inv("nodeRegistration.name"), inv("nodeRegistration.imagePullPolicy"), inv("caCertPath")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goodJoin()
			tc.mutate(c)
			checkErrors(t, ValidateJoinConfiguration(c), tc.want)
		})
	}
}

func TestResetConfiguration(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *kubeadm.ResetConfiguration)
		want   []want
	}{
		{"cri socket", func(c *kubeadm.ResetConfiguration) { c.CRISocket = "unix" }, []want{inv("criSocket")}},
		{"certificates dir", func(c *kubeadm.ResetConfiguration) { c.CertificatesDir = "rel" }, []want{inv("certificatesDir")}},
		{"unmount flags", func(c *kubeadm.ResetConfiguration) {
			c.UnmountFlags = []string{"MNT_FORCE", "MNT_DETACH", "MNT_EXPIRE", "UMOUNT_NOFOLLOW", "foo", "mnt_force", "MNT_FORCE"}
		}, []want{inv("unmountFlags"), inv("unmountFlags")}},
		{"not validated", func(c *kubeadm.ResetConfiguration) {
			c.IgnorePreflightErrors = []string{"all", "foo"}
			c.SkipPhases = []string{"bogus"}
			c.Timeouts = &kubeadm.Timeouts{EtcdAPICall: dur(-time.Second)}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := goodReset()
			tc.mutate(c)
			checkErrors(t, ValidateResetConfiguration(c), tc.want)
		})
	}
}

func TestUpgradeConfiguration(t *testing.T) {
	c := goodUpgrade()
	c.Apply.ImagePullPolicy = "x"
	c.Node.ImagePullPolicy = "Sometimes"
	c.Apply.KubernetesVersion = "foo"
	c.Diff.DiffContextLines = -1
	checkErrors(t, ValidateUpgradeConfiguration(c), []want{inv("apply.imagePullPolicy"), inv("node.imagePullPolicy")})
}

func TestValidateIgnorePreflightErrors(t *testing.T) {
	names, errs := ValidateIgnorePreflightErrors([]string{"Swap"}, []string{"swap", "FileAvailable"})
	if len(errs) != 0 || !reflect.DeepEqual(names, []string{"fileavailable", "swap"}) {
		t.Errorf("got %v %v", names, errs)
	}
	names, errs = ValidateIgnorePreflightErrors(nil, []string{"ALL", "all"})
	if len(errs) != 0 || !reflect.DeepEqual(names, []string{"all"}) {
		t.Errorf("got %v %v", names, errs)
	}
	_, errs = ValidateIgnorePreflightErrors([]string{"all"}, []string{"Swap", "Foo"})
	checkErrors(t, errs, []want{inv("ignore-preflight-errors")})
	if errs[0].BadValue != "all,foo,swap" {
		t.Errorf("bad value %v", errs[0].BadValue)
	}
}

func TestClusterConfigurationWarnings(t *testing.T) {
	c := goodCluster()
	if w := ClusterConfigurationWarnings(&c); len(w) != 0 {
		t.Fatalf("defaults warn: %v", w)
	}
	c.CertificateValidityPeriod = dur(300000 * time.Hour)
	c.CACertificateValidityPeriod = dur(200000 * time.Hour)
	w := ClusterConfigurationWarnings(&c)
	prefixes := []string{"certificateValidityPeriod:", "caCertificateValidityPeriod:", "certificateValidityPeriod:"}
	if len(w) != len(prefixes) {
		t.Fatalf("got %q", w)
	}
	for i, p := range prefixes {
		if !strings.HasPrefix(w[i], p) {
			t.Errorf("warning %d = %q, want prefix %q", i, w[i], p)
		}
	}
	c = goodCluster()
	c.CertificateValidityPeriod = dur(8761 * time.Hour)
	c.CACertificateValidityPeriod = dur(8761 * time.Hour)
	if w := ClusterConfigurationWarnings(&c); len(w) != 1 {
		t.Errorf("equal periods should only warn about the leaf default: %q", w)
	}
}

func TestOverlappingSubnetsWarn(t *testing.T) {
	c := goodCluster()
	c.Networking.PodSubnet = "10.244.0.0/16,2001:db8:42:0::/56"
	c.Networking.ServiceSubnet = "10.96.0.0/16,2001:db8:42:1::/112"
	w := ClusterConfigurationWarnings(&c)
	if len(w) != 1 || !strings.HasPrefix(w[0], "networking.podSubnet: ") ||
		!strings.Contains(w[0], "2001:db8:42::/56") || !strings.Contains(w[0], "2001:db8:42:1::/112") {
		t.Errorf("want one warning naming the IPv6 pair, got %q", w)
	}
	c.Networking.PodSubnet = "10.244.0.0/16,2001:db8:43::/56"
	if w := ClusterConfigurationWarnings(&c); len(w) != 0 {
		t.Errorf("disjoint subnets warn: %q", w)
	}
}

func TestMessagesKeepPathAndValue(t *testing.T) {
	c := goodCluster()
	c.Networking.ServiceSubnet = "foo"
	got := ValidateClusterConfiguration(&c).ToAggregate().Error()
	if !strings.HasPrefix(got, `networking.serviceSubnet: Invalid value: "foo": `) {
		t.Errorf("unexpected shape: %s", got)
	}
	c = goodCluster()
	c.FeatureGates = map[string]bool{"Foo": true}
	got = ValidateClusterConfiguration(&c).ToAggregate().Error()
	if !strings.Contains(got, `featureGates: Invalid value: {"Foo":true}: "Foo"`) {
		t.Errorf("unexpected shape: %s", got)
	}
}
