package validation

// What the reference kubeadm v1.36.3 does, found by running it as a black
// box ("config validate", "config migrate", "init phase certs ca" on
// hand-written files). Some of it is the loader's job, not this package's:
//
// Loader / defaulting (must happen before validation, outside this package):
//   - nodeRegistration.name: whitespace trimmed and lowercased.
//   - apiServer.certSANs: lowercased (visible in "config migrate").
//   - criSocket (init, join, reset): a value not starting with "unix" gets
//     "unix://" prepended, with a deprecation warning naming the old value.
//     "unix", "unixfoo", "unix:x" are left alone (and may then fail here).
//   - localAPIEndpoint.advertiseAddress: a value that is not an IP fails
//     before validation (`couldn't use "1.2.3" as "apiserver-advertise-address",
//     must be ipv4 or ipv6 address`); 0.0.0.0 / :: are replaced by the
//     detected address; a loopback address fails ("unable to select an IP
//     from lo network interface"); IPv4 with leading zeros is accepted.
//   - controlPlaneEndpoint is checked before validation and fails with a
//     plain error ("hostport X: ..."); CheckControlPlaneEndpoint has the
//     same rule.
//   - kubernetesVersion: a non-semver, non-label value fails, and so does a
//     version below v1.35.0 (pre-releases of v1.35.0 included; "ci/" is
//     stripped first). There is no upper bound: v1.38.0 or v2.0.0 pass
//     validation (only preflight complains).
//   - bootstrapTokens: [] still yields one generated default token.
//   - bootstrap tokens: a malformed token fails while decoding; a token with
//     "expires" and no "ttl" still gets ttl=24h, so it always fails the
//     ttl/expires exclusivity check below; groups are always defaulted, so a
//     token without the "authentication" usage always fails too.
//   - Unknown feature gates and every error below are reported together;
//     the CLI prints field.ErrorList.ToAggregate(), which drops duplicates.
//
// Warnings, not errors: certificateValidityPeriod above one year,
// caCertificateValidityPeriod above ten years, and a leaf period longer than
// the CA's (ClusterConfigurationWarnings). Negative periods and timeouts are
// accepted. Pod and Service subnets that overlap are accepted by the
// reference without a word (Kubernetes' own dual-stack example nests the
// IPv6 Service range in the pod range); here they are accepted with a
// warning.
//
// Deliberately stricter than the reference: taints (key, value, effect,
// duplicates) are errors here, because the API server and the kubelet
// refuse them anyway, only much later, on a half-built cluster.
//
// Not validated at all by the reference (so not here either, to accept the
// same files): extraEnvs, extraVolumes (names, paths, pathType),
// duplicate extraArgs, caCertHashes format (checked during discovery),
// // timeouts, skipPhases, patches, image tags, clusterName, component configs. The
// "all plus other names" rule of ignorePreflightErrors is applied by the
// commands after merging flags and config (ValidateIgnorePreflightErrors),
// not by "config validate".

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// MinimumControlPlaneVersion is the oldest control plane this release deploys.
const MinimumControlPlaneVersion = "v1.36.0"

// KnownUnmountFlags are the values accepted in ResetConfiguration.unmountFlags.
var KnownUnmountFlags = []string{"MNT_FORCE", "MNT_DETACH", "MNT_EXPIRE", "UMOUNT_NOFOLLOW"}

// KnownEncryptionAlgorithms are the values accepted in encryptionAlgorithm.
var KnownEncryptionAlgorithms = []kubeadm.EncryptionAlgorithmType{
	v1beta4.EncryptionAlgorithmECDSAP256,
	v1beta4.EncryptionAlgorithmECDSAP384,
	v1beta4.EncryptionAlgorithmRSA2048,
	v1beta4.EncryptionAlgorithmRSA3072,
	v1beta4.EncryptionAlgorithmRSA4096,
}

// certificateKeyBytes is the size of the AES-256 key that encrypts the
// certificates uploaded for joining control-plane nodes.
const certificateKeyBytes = 32

// ValidateInitConfiguration checks a defaulted InitConfiguration, including
// its ClusterConfiguration.
func ValidateInitConfiguration(c *kubeadm.InitConfiguration) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateNodeRegistration(&c.NodeRegistration, field.NewPath("nodeRegistration"))...)
	errs = append(errs, validateBootstrapTokens(c.BootstrapTokens, field.NewPath("bootstrapTokens"))...)
	errs = append(errs, ValidateClusterConfiguration(&c.ClusterConfiguration)...)
	errs = append(errs, validateAPIEndpoint(&c.LocalAPIEndpoint, field.NewPath("localAPIEndpoint"))...)
	errs = append(errs, validateCertificateKey(c.CertificateKey, field.NewPath("certificateKey"))...)
	return errs
}

// ValidateClusterConfiguration checks a defaulted ClusterConfiguration.
func ValidateClusterConfiguration(c *kubeadm.ClusterConfiguration) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateImageRepository(c.DNS.ImageRepository, field.NewPath("dns", "imageRepository"))...)
	errs = append(errs, validateNetworking(c, field.NewPath("networking"))...)
	errs = append(errs, validateCertSANs(c.APIServer.CertSANs, field.NewPath("apiServer", "certSANs"))...)
	errs = append(errs, validateExtraArgs(c.APIServer.ExtraArgs, field.NewPath("apiServer", "extraArgs"))...)
	errs = append(errs, validateExtraArgs(c.ControllerManager.ExtraArgs, field.NewPath("controllerManager", "extraArgs"))...)
	errs = append(errs, validateExtraArgs(c.Scheduler.ExtraArgs, field.NewPath("scheduler", "extraArgs"))...)
	errs = append(errs, validateAbsolutePath(c.CertificatesDir, field.NewPath("certificatesDir"))...)
	errs = append(errs, validateFeatureGates(c.FeatureGates, field.NewPath("featureGates"))...)
	errs = append(errs, validateImageRepository(c.ImageRepository, field.NewPath("imageRepository"))...)
	errs = append(errs, validateEtcd(&c.Etcd, field.NewPath("etcd"))...)
	errs = append(errs, validateEncryptionAlgorithm(c.EncryptionAlgorithm, field.NewPath("encryptionAlgorithm"))...)
	// The loader already refuses these two before validation; checking
	// them again keeps a hand-built configuration honest.
	if err := CheckControlPlaneEndpoint(c); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("controlPlaneEndpoint"), c.ControlPlaneEndpoint, err.Error()))
	}
	errs = append(errs, validateKubernetesVersion(c.KubernetesVersion, field.NewPath("kubernetesVersion"))...)
	return errs
}

// ClusterConfigurationWarnings returns the non-fatal findings about c, each
// a sentence starting with the field path, for the caller to print as
// warnings.
func ClusterConfigurationWarnings(c *kubeadm.ClusterConfiguration) []string {
	var out []string
	leaf, ca := c.CertificateValidityPeriod, c.CACertificateValidityPeriod
	if leaf != nil && leaf.Duration > v1beta4.DefaultCertificateValidityPeriod {
		out = append(out, fmt.Sprintf("certificateValidityPeriod: %s is longer than the recommended %s",
			leaf.Duration, v1beta4.DefaultCertificateValidityPeriod))
	}
	if ca != nil && ca.Duration > v1beta4.DefaultCACertificateValidityPeriod {
		out = append(out, fmt.Sprintf("caCertificateValidityPeriod: %s is longer than the recommended %s",
			ca.Duration, v1beta4.DefaultCACertificateValidityPeriod))
	}
	if leaf != nil && ca != nil && leaf.Duration > ca.Duration {
		out = append(out, fmt.Sprintf("certificateValidityPeriod: %s is longer than caCertificateValidityPeriod (%s); certificates cannot outlive their CA",
			leaf.Duration, ca.Duration))
	}
	// Upstream kubeadm accepts overlapping subnets silently. The controller
	// manager never gives a node a pod range that overlaps the Service
	// range, but a pod network add-on with its own address management may.
	for _, pair := range overlappingSubnets(c.Networking.PodSubnet, c.Networking.ServiceSubnet) {
		out = append(out, fmt.Sprintf("networking.podSubnet: the pod subnet %s overlaps the service subnet %s; "+
			"make sure the pod network add-on does not give pods addresses of the Service range", pair[0], pair[1]))
	}
	return out
}

// ValidateJoinConfiguration checks a defaulted JoinConfiguration.
func ValidateJoinConfiguration(c *kubeadm.JoinConfiguration) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateDiscovery(&c.Discovery, field.NewPath("discovery"))...)
	errs = append(errs, validateNodeRegistration(&c.NodeRegistration, field.NewPath("nodeRegistration"))...)
	if c.ControlPlane != nil {
		p := field.NewPath("controlPlane")
		errs = append(errs, validateAPIEndpoint(&c.ControlPlane.LocalAPIEndpoint, p.Child("localAPIEndpoint"))...)
		errs = append(errs, validateCertificateKey(c.ControlPlane.CertificateKey, p.Child("certificateKey"))...)
	}
	if !filepath.IsAbs(c.CACertPath) {
		errs = append(errs, field.Invalid(field.NewPath("caCertPath"), c.CACertPath, "the CA certificate path must be absolute"))
	}
	return errs
}

// ValidateResetConfiguration checks a defaulted ResetConfiguration.
func ValidateResetConfiguration(c *kubeadm.ResetConfiguration) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateSocket(c.CRISocket, field.NewPath("criSocket"))...)
	errs = append(errs, validateAbsolutePath(c.CertificatesDir, field.NewPath("certificatesDir"))...)
	known := sets.New(KnownUnmountFlags...)
	for i, f := range c.UnmountFlags {
		if !known.Has(f) {
			errs = append(errs, field.Invalid(field.NewPath("unmountFlags"), fmt.Sprintf("index %d", i),
				fmt.Sprintf("%q is not a known unmount flag (known: %s)", f, strings.Join(KnownUnmountFlags, ", "))))
		}
	}
	return errs
}

// ValidateUpgradeConfiguration checks a defaulted UpgradeConfiguration.
func ValidateUpgradeConfiguration(c *kubeadm.UpgradeConfiguration) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validatePullPolicy(c.Apply.ImagePullPolicy, field.NewPath("apply", "imagePullPolicy"))...)
	errs = append(errs, validatePullPolicy(c.Node.ImagePullPolicy, field.NewPath("node", "imagePullPolicy"))...)
	return errs
}

// ValidateIgnorePreflightErrors merges the names given on the command line
// and in the configuration, lowercased, de-duplicated and sorted, and refuses
// "all" together with any other name. The commands call it after loading;
// "config validate" does not.
func ValidateIgnorePreflightErrors(fromFlags, fromConfig []string) ([]string, field.ErrorList) {
	merged := sets.New[string]()
	for _, list := range [][]string{fromFlags, fromConfig} {
		for _, name := range list {
			merged.Insert(strings.ToLower(name))
		}
	}
	names := sets.List(merged)
	if merged.Has("all") && merged.Len() > 1 {
		return names, field.ErrorList{field.Invalid(field.NewPath("ignore-preflight-errors"), strings.Join(names, ","),
			`"all" already ignores every check; do not list individual checks with it`)}
	}
	return names, nil
}

// CheckControlPlaneEndpoint checks controlPlaneEndpoint from its parts as
// package config parsed them (c.Endpoint): the port, when present and
// non-empty, must be a number from 1 to 65535 (leading zeros allowed, no
// sign), and the host an IP address or a lowercase DNS-1123 subdomain. An
// empty controlPlaneEndpoint is fine.
func CheckControlPlaneEndpoint(c *kubeadm.ClusterConfiguration) error {
	raw, e := c.ControlPlaneEndpoint, c.Endpoint
	if raw == "" {
		return nil
	}
	if e.Port != "" {
		if n, err := strconv.ParseUint(e.Port, 10, 16); err != nil || n == 0 {
			return fmt.Errorf("hostport %s: the port %q is not a number from 1 to 65535", raw, e.Port)
		}
	}
	if !e.IsIP() && len(k8svalidation.IsDNS1123Subdomain(e.Host)) > 0 {
		return fmt.Errorf("hostport %s: the host %q is neither an IP address nor a lowercase DNS-1123 subdomain", raw, e.Host)
	}
	return nil
}

func validateNodeRegistration(n *kubeadm.NodeRegistrationOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	name := strings.ToLower(n.Name)
	for _, msg := range k8svalidation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p.Child("name"), name, msg))
	}
	errs = append(errs, validateSocket(n.CRISocket, p.Child("criSocket"))...)
	errs = append(errs, validateExtraArgs(n.KubeletExtraArgs, p.Child("kubeletExtraArgs"))...)
	errs = append(errs, validatePullPolicy(n.ImagePullPolicy, p.Child("imagePullPolicy"))...)
	errs = append(errs, validateTaints(n.Taints, p.Child("taints"))...)
	return errs
}

// validateTaints checks taint keys and effects. Upstream kubeadm does not,
// and a bad taint then fails much later when the node registers; refusing it
// here is a deliberate difference.
func validateTaints(taints []corev1.Taint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	effects := []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}
	seen := map[[2]string]bool{}
	for i, t := range taints {
		tp := p.Index(i)
		for _, msg := range k8svalidation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(tp.Child("key"), t.Key, msg))
		}
		if t.Value != "" {
			for _, msg := range k8svalidation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(tp.Child("value"), t.Value, msg))
			}
		}
		if !sets.New(effects...).Has(string(t.Effect)) {
			errs = append(errs, field.NotSupported(tp.Child("effect"), t.Effect, effects))
		}
		k := [2]string{t.Key, string(t.Effect)}
		if seen[k] {
			errs = append(errs, field.Duplicate(tp, fmt.Sprintf("%s:%s", t.Key, t.Effect)))
		}
		seen[k] = true
	}
	return errs
}

// socketScheme is the only URL scheme a CRI socket may use on this OS.
func socketScheme() string {
	if runtime.GOOS == "windows" {
		return "npipe"
	}
	return "unix"
}

// validateSocket checks a CRI socket URL. Empty means "detect it later"
// (the loader may skip detection for commands that do not need it).
func validateSocket(s string, p *field.Path) field.ErrorList {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return field.ErrorList{field.Invalid(p, s, fmt.Sprintf("not a valid URL: %v", err))}
	}
	if want := socketScheme(); u.Scheme != want {
		return field.ErrorList{field.Invalid(p, s, fmt.Sprintf("the socket URL must use the %q scheme, not %q", want, u.Scheme))}
	}
	return nil
}

func validateExtraArgs(args []kubeadm.Arg, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range args {
		if a.Name == "" {
			errs = append(errs, field.Invalid(p, fmt.Sprintf("index %d", i), "the argument's name is empty"))
		}
	}
	return errs
}

func validatePullPolicy(policy corev1.PullPolicy, p *field.Path) field.ErrorList {
	switch policy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
		return nil
	}
	return field.ErrorList{field.Invalid(p, policy, fmt.Sprintf("the pull policy must be %s, %s or %s",
		corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever))}
}

func validateBootstrapTokens(tokens []kubeadm.BootstrapToken, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range tokens {
		t := &tokens[i]
		tp := p.Child(strconv.Itoa(i))
		if t.Token != nil {
			if s := t.Token.String(); !bootstraputil.IsValidBootstrapToken(s) {
				errs = append(errs, field.Invalid(tp.Child("token"), redactToken(s), `not a bootstrap token of the form "[a-z0-9]{6}.[a-z0-9]{16}"`))
			}
		}
		if err := bootstraputil.ValidateUsages(t.Usages); err != nil {
			errs = append(errs, field.Invalid(tp.Child("usages"), t.Usages, err.Error()))
		}
		if len(t.Groups) > 0 && !sets.New(t.Usages...).Has("authentication") {
			errs = append(errs, field.Invalid(tp.Child("groups"), t.Groups, `groups are only allowed when the usages include "authentication"`))
		}
		for _, g := range t.Groups {
			if err := bootstraputil.ValidateBootstrapGroupName(g); err != nil {
				errs = append(errs, field.Invalid(tp.Child("groups"), t.Groups, err.Error()))
			}
		}
		if t.TTL != nil && t.Expires != nil {
			errs = append(errs, field.Invalid(tp, "", "ttl and expires cannot both be set"))
		}
	}
	return errs
}

// parseIPSloppy parses an IP address, accepting IPv4 octets with leading
// zeros (taken as decimal) like older Go releases and Kubernetes do.
func parseIPSloppy(s string) net.IP {
	if ip := net.ParseIP(s); ip != nil {
		return ip
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return nil
	}
	ip := make(net.IP, 4)
	for i, part := range parts {
		if part == "" || strings.TrimLeft(part, "0123456789") != "" {
			return nil
		}
		n, err := strconv.ParseUint(part, 10, 8)
		if err != nil {
			return nil
		}
		ip[i] = byte(n)
	}
	return ip.To16()
}

func validateAPIEndpoint(e *kubeadm.APIEndpoint, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Empty means the loader was told not to detect it (it always does
	// before the reference tool validates).
	if e.AdvertiseAddress != "" && parseIPSloppy(e.AdvertiseAddress) == nil {
		errs = append(errs, field.Invalid(p.Child("advertiseAddress"), e.AdvertiseAddress, "not an IPv4 or IPv6 address"))
	}
	for _, msg := range k8svalidation.IsValidPortNum(int(e.BindPort)) {
		errs = append(errs, field.Invalid(p.Child("bindPort"), e.BindPort, msg))
	}
	return errs
}

func validateCertificateKey(key string, p *field.Path) field.ErrorList {
	if key == "" {
		return nil
	}
	// The key is a secret: errors describe it, never show it.
	const shown = "<redacted>"
	b, err := hex.DecodeString(key)
	if err != nil {
		return field.ErrorList{field.Invalid(p, shown, "the certificate key is not hexadecimal")}
	}
	if len(b) != certificateKeyBytes {
		return field.ErrorList{field.Invalid(p, shown, fmt.Sprintf("the certificate key is %d bytes long; an AES-256 key of %d bytes (%d hex characters) is required",
			len(b), certificateKeyBytes, 2*certificateKeyBytes))}
	}
	return nil
}

func validateAbsolutePath(path string, p *field.Path) field.ErrorList {
	if filepath.IsAbs(path) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, path, "the path must be absolute")}
}

// validateCertSANs accepts IP addresses, DNS-1123 subdomains and wildcard
// subdomains ("*.example.com"), compared in lowercase.
func validateCertSANs(sans []string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, san := range sans {
		san = strings.ToLower(san)
		if net.ParseIP(san) != nil {
			continue
		}
		plain := k8svalidation.IsDNS1123Subdomain(san)
		wild := k8svalidation.IsWildcardDNS1123Subdomain(san)
		if len(plain) == 0 || len(wild) == 0 {
			continue
		}
		errs = append(errs, field.Invalid(p, san, "a subject alternative name must be an IP address, a DNS name or a wildcard DNS name like *.example.com: "+
			strings.Join(append(plain, wild...), "; ")))
	}
	return errs
}

// Image repository grammar: an optional registry host (DNS name, IPv4, or
// bracketed IPv6, with an optional port) followed by lowercase path
// components separated by "/"; components use ".", "_", "__" or runs of "-"
// as separators. The repository is checked as if an image name followed it,
// so a registry host alone ("Registry.io", "localhost:5000") is fine.
var imageRepositoryRegexp = func() *regexp.Regexp {
	const (
		domainLabel = `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		domainName  = domainLabel + `(?:\.` + domainLabel + `)*`
		ipv6        = `\[[a-fA-F0-9:]+\]`
		domain      = `(?:` + domainName + `|` + ipv6 + `)(?::[0-9]+)?`
		alnum       = `[a-z0-9]+`
		separator   = `(?:[._]|__|-+)`
		component   = alnum + `(?:` + separator + alnum + `)*`
		name        = `(?:` + domain + `/)?` + component + `(?:/` + component + `)*`
	)
	return regexp.MustCompile(`^` + name + `$`)
}()

func validateImageRepository(repo string, p *field.Path) field.ErrorList {
	if repo == "" || imageRepositoryRegexp.MatchString(repo+"/x") {
		return nil
	}
	return field.ErrorList{field.Invalid(p, repo, "not a valid image repository (registry[:port][/path])")}
}

func validateEncryptionAlgorithm(alg kubeadm.EncryptionAlgorithmType, p *field.Path) field.ErrorList {
	for _, known := range KnownEncryptionAlgorithms {
		if alg == known {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(p, alg, KnownEncryptionAlgorithms)}
}

func validateEtcd(e *kubeadm.Etcd, p *field.Path) field.ErrorList {
	if e.Local != nil && e.External != nil {
		return field.ErrorList{field.Invalid(p, "", "local and external etcd cannot both be set")}
	}
	var errs field.ErrorList
	if l := e.Local; l != nil {
		lp := p.Child("local")
		errs = append(errs, validateAbsolutePath(l.DataDir, lp.Child("dataDir"))...)
		errs = append(errs, validateCertSANs(l.ServerCertSANs, lp.Child("serverCertSANs"))...)
		errs = append(errs, validateCertSANs(l.PeerCertSANs, lp.Child("peerCertSANs"))...)
		errs = append(errs, validateImageRepository(l.ImageRepository, lp.Child("imageRepository"))...)
		errs = append(errs, validateExtraArgs(l.ExtraArgs, lp.Child("extraArgs"))...)
	}
	if x := e.External; x != nil {
		errs = append(errs, validateExternalEtcd(x, p.Child("external"))...)
	}
	return errs
}

func validateExternalEtcd(x *kubeadm.ExternalEtcd, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	hasCert, hasKey, hasCA := x.CertFile != "", x.KeyFile != "", x.CAFile != ""
	switch {
	case hasCert != hasKey:
		errs = append(errs, field.Invalid(p, "", "certFile and keyFile must be set together or not at all"))
	case hasCert && !hasCA:
		errs = append(errs, field.Invalid(p, "", "certFile and keyFile need caFile to be set as well"))
	}
	requireHTTPS := hasCert || hasKey || hasCA
	if len(x.Endpoints) == 0 {
		errs = append(errs, field.Invalid(p.Child("endpoints"), "", "at least one endpoint is required"))
	}
	errs = append(errs, validateEtcdURLs(x.Endpoints, requireHTTPS, p.Child("endpoints"))...)
	errs = append(errs, validateEtcdURLs(x.HTTPEndpoints, false, p.Child("httpEndpoints"))...)
	for _, f := range []struct{ name, value string }{{"caFile", x.CAFile}, {"certFile", x.CertFile}, {"keyFile", x.KeyFile}} {
		if f.value != "" {
			errs = append(errs, validateAbsolutePath(f.value, p.Child(f.name))...)
		}
	}
	return errs
}

func validateEtcdURLs(urls []string, requireHTTPS bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, s := range urls {
		u, err := url.Parse(s)
		if err != nil {
			errs = append(errs, field.Invalid(p, s, fmt.Sprintf("not a valid URL: %v", err)))
			continue
		}
		if requireHTTPS && u.Scheme != "https" {
			errs = append(errs, field.Invalid(p, s, "with TLS files configured, the URL must use https"))
		}
		if u.Scheme == "" {
			errs = append(errs, field.Invalid(p, s, "the URL has no scheme"))
		}
	}
	return errs
}

func validateKubernetesVersion(v string, p *field.Path) field.ErrorList {
	parsed, err := utilversion.ParseSemantic(strings.TrimPrefix(v, "ci/"))
	if err != nil {
		return field.ErrorList{field.Invalid(p, v, "not a semantic version such as v1.36.3")}
	}
	if parsed.LessThan(utilversion.MustParseSemantic(MinimumControlPlaneVersion)) {
		return field.ErrorList{field.Invalid(p, v, fmt.Sprintf("control planes older than %s are not supported by this release", MinimumControlPlaneVersion))}
	}
	return nil
}

// validateDiscovery requires exactly one discovery method. When neither is
// set nothing else is reported. The TLS bootstrap token is checked after the
// bootstrap-token method, and always when that method is set (it defaults to
// the discovery token); with file discovery only a non-empty one is checked.
func validateDiscovery(d *kubeadm.Discovery, p *field.Path) field.ErrorList {
	if d.BootstrapToken == nil && d.File == nil {
		return field.ErrorList{field.Invalid(p, "", "one of bootstrapToken or file must be set (on the command line: the API server's address as the argument with --token, or --discovery-file)")}
	}
	var errs field.ErrorList
	if d.BootstrapToken != nil && d.File != nil {
		errs = append(errs, field.Invalid(p, "", "bootstrapToken and file are mutually exclusive"))
	}
	if d.BootstrapToken != nil {
		errs = append(errs, validateBootstrapTokenDiscovery(d.BootstrapToken, p.Child("bootstrapToken"))...)
		errs = append(errs, validateToken(d.TLSBootstrapToken, p.Child("tlsBootstrapToken"))...)
		if d.File != nil {
			errs = append(errs, validateFileDiscovery(d.File, p.Child("file"))...)
		}
		return errs
	}
	errs = append(errs, validateFileDiscovery(d.File, p.Child("file"))...)
	if d.TLSBootstrapToken != "" {
		errs = append(errs, validateToken(d.TLSBootstrapToken, p.Child("tlsBootstrapToken"))...)
	}
	return errs
}

func validateToken(token string, p *field.Path) field.ErrorList {
	if bootstraputil.IsValidBootstrapToken(token) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, redactToken(token), `not a bootstrap token of the form "[a-z0-9]{6}.[a-z0-9]{16}"`)}
}

// redactToken keeps what may be shown of a malformed token: the part
// before the dot (the public ID) when there is one. Secrets never reach an
// error message.
func redactToken(token string) string {
	if id, _, ok := strings.Cut(token, "."); ok {
		return id + ".<redacted>"
	}
	if token == "" {
		return ""
	}
	return "<redacted>"
}

func validateBootstrapTokenDiscovery(b *kubeadm.BootstrapTokenDiscovery, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if b.APIServerEndpoint == "" {
		errs = append(errs, field.Required(p, "apiServerEndpoint must be set"))
	}
	if len(b.CACertHashes) == 0 && !b.UnsafeSkipCAVerification {
		errs = append(errs, field.Invalid(p.Child("caCertHashes"), "",
			"token discovery without caCertHashes does not authenticate the cluster; give caCertHashes, or set unsafeSkipCAVerification (flag --discovery-token-unsafe-skip-ca-verification) to accept the risk"))
	}
	errs = append(errs, validateToken(b.Token, p.Child("token"))...)
	if _, _, err := net.SplitHostPort(b.APIServerEndpoint); err != nil {
		errs = append(errs, field.Invalid(p.Child("apiServerEndpoint"), b.APIServerEndpoint, err.Error()))
	}
	return errs
}

// validateFileDiscovery accepts an https URL or a path that exists.
func validateFileDiscovery(f *kubeadm.FileDiscovery, p *field.Path) field.ErrorList {
	path := f.KubeConfigPath
	if u, err := url.Parse(path); err == nil && u.Scheme != "" {
		if u.Scheme != "https" {
			return field.ErrorList{field.Invalid(p.Child("kubeConfigPath"), path, "a URL must use the https scheme")}
		}
		return nil
	}
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return field.ErrorList{field.Invalid(p.Child("kubeConfigPath"), path, "neither an https URL nor an existing file")}
	}
	return nil
}
