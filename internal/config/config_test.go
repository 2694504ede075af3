package config

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kubeadm-go/kubeadm/internal/apis/kubeadm"
	"github.com/kubeadm-go/kubeadm/internal/config/validation"
	"github.com/kubeadm-go/kubeadm/pkg/apis/kubeadm/v1beta4"
)

// fakeEnv is an Environment that never looks at the machine or the network.
func fakeEnv() Environment {
	return Environment{
		Hostname:       func() (string, error) { return "Node-1", nil },
		DefaultAddress: func() (net.IP, error) { return net.ParseIP("192.0.2.10"), nil },
		CRISocket:      func() (string, error) { return "unix:///run/fake.sock", nil },
		ResolveVersion: func(_ context.Context, v string) (string, error) {
			if v == "stable-1" {
				return "v1.36.3", nil
			}
			if !strings.HasPrefix(v, "v") {
				v = "v" + v
			}
			return v, nil
		},
		NewToken: func() (string, error) { return "abcdef.0123456789abcdef", nil },
		Warn:     func(string, ...any) {},
	}
}

// kubeadm.k8s.io/v1beta3 was removed in v1.37: every kind of it is
// refused, naming the release that can still migrate it.
func TestDecodeRefusesV1beta3(t *testing.T) {
	for _, kind := range []string{"InitConfiguration", "ClusterConfiguration", "JoinConfiguration"} {
		_, err := Decode([]byte("apiVersion: kubeadm.k8s.io/v1beta3\nkind: "+kind+"\n"), Lenient)
		if err == nil || !strings.Contains(err.Error(), "v1beta3") || !strings.Contains(err.Error(), "v1.36") {
			t.Errorf("%s of v1beta3: %v, want an error naming v1beta3 and kubeadm v1.36", kind, err)
		}
	}
}

// TestUnusedKinds: the kinds a command does not read come out in the
// file's order (upstream warns of them in that order), documents of unknown
// groups aside (those are warned of while decoding).
func TestUnusedKinds(t *testing.T) {
	docs, err := Decode([]byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: UpgradeConfiguration
---
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
---
apiVersion: example.com/v1
kind: Other
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
---
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
`), Lenient)
	if err != nil {
		t.Fatal(err)
	}
	got := docs.Unused("ClusterConfiguration", "InitConfiguration")
	want := []string{"UpgradeConfiguration", "KubeletConfiguration", "JoinConfiguration"}
	if !slices.Equal(got, want) {
		t.Errorf("Unused = %v, want %v", got, want)
	}
	if len(docs.Warnings) != 1 || !strings.Contains(docs.Warnings[0], "example.com/v1") {
		t.Errorf("warnings = %q, want one about the unknown document", docs.Warnings)
	}
}

func TestDecodeRefusals(t *testing.T) {
	cases := map[string]struct {
		in, want string
	}{
		"old version":     {"apiVersion: kubeadm.k8s.io/v1beta2\nkind: InitConfiguration\n", "kubeadm v1.22"},
		"unknown version": {"apiVersion: kubeadm.k8s.io/v1alpha9\nkind: InitConfiguration\n", "unknown API version"},
		"unknown kind":    {"apiVersion: kubeadm.k8s.io/v1beta4\nkind: FooConfiguration\n", `unknown kind "FooConfiguration"`},
		"not yaml":        {"{{{ this is : not yaml", "not valid YAML"},
		"scalar":          {"just a string\n", "not a YAML mapping"},
		"no kind":         {"apiVersion: kubeadm.k8s.io/v1beta4\n", "has no kind"},
		"no apiVersion":   {"kind: InitConfiguration\n", "has no apiVersion"},
		"bad token":       {"apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nbootstrapTokens:\n- token: nope\n", "is not of the form"},
		"twice":           {"apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n---\napiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n", "more than one InitConfiguration"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in), Lenient)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestBadTokenSecretNotInError(t *testing.T) {
	_, err := Decode([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nbootstrapTokens:\n- token: abcdef.SECRETSECRETSECRETX\n"), Lenient)
	if err == nil {
		t.Fatal("expected an error")
	}
	if strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("the token secret leaked into the error: %v", err)
	}
}

func TestUnknownAndDuplicateFields(t *testing.T) {
	in := []byte(`apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
clusterName: a
clusterName: b
networking:
  podSubnetz: 10.0.0.0/16
`)
	docs, err := Decode(in, Lenient)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(docs.Warnings, "\n")
	if !strings.Contains(joined, "networking.podSubnetz") || !strings.Contains(joined, "clusterName") {
		t.Errorf("warnings should name both fields: %q", joined)
	}
	if docs.Cluster.ClusterName != "b" {
		t.Errorf("the last duplicate should win, got %q", docs.Cluster.ClusterName)
	}
	if _, err := Decode(in, Strict); err == nil || !strings.Contains(err.Error(), "networking.podSubnetz") && !strings.Contains(err.Error(), "clusterName") {
		t.Errorf("strict decoding should refuse naming the field, got %v", err)
	}
}

func TestInitConfigurationDefaults(t *testing.T) {
	cfg, err := fakeEnv().InitConfiguration(context.Background(), nil, DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string][2]string{
		"node name":      {cfg.NodeRegistration.Name, "node-1"},
		"cri socket":     {cfg.NodeRegistration.CRISocket, "unix:///run/fake.sock"},
		"address":        {cfg.LocalAPIEndpoint.AdvertiseAddress, "192.0.2.10"},
		"version":        {cfg.KubernetesVersion, "v1.36.3"},
		"service subnet": {cfg.Networking.ServiceSubnet, "10.96.0.0/12"},
		"dns domain":     {cfg.Networking.DNSDomain, "cluster.local"},
		"certs dir":      {cfg.CertificatesDir, "/etc/kubernetes/pki"},
		"repository":     {cfg.ImageRepository, "registry.k8s.io"},
		"etcd data dir":  {cfg.Etcd.Local.DataDir, "/var/lib/etcd"},
		"token":          {cfg.BootstrapTokens[0].Token.String(), "abcdef.0123456789abcdef"},
		"token ttl":      {cfg.BootstrapTokens[0].TTL.Duration.String(), "24h0m0s"},
		"token group":    {cfg.BootstrapTokens[0].Groups[0], v1beta4.DefaultTokenGroup},
		"taint":          {cfg.NodeRegistration.Taints[0].Key, "node-role.kubernetes.io/control-plane"},
		"kubelet dns":    {cfg.ComponentConfigs.Kubelet.ClusterDNS[0], "10.96.0.10"},
		"kubelet cgroup": {cfg.ComponentConfigs.Kubelet.CgroupDriver, "systemd"},
		"kubelet ca":     {cfg.ComponentConfigs.Kubelet.Authentication.X509.ClientCAFile, "/etc/kubernetes/pki/ca.crt"},
		"proxy bind":     {cfg.ComponentConfigs.KubeProxy.BindAddress, "0.0.0.0"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s: got %q, want %q", name, c[0], c[1])
		}
	}
}

func TestEmptyTaintsStayEmpty(t *testing.T) {
	docs, err := Decode([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nnodeRegistration:\n  taints: []\n"), Strict)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fakeEnv().InitConfiguration(context.Background(), docs, DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NodeRegistration.Taints == nil || len(cfg.NodeRegistration.Taints) != 0 {
		t.Fatalf("an explicit empty taint list must stay empty, got %+v", cfg.NodeRegistration.Taints)
	}
}

func TestExternalEtcdHTTPEndpointsDefault(t *testing.T) {
	for name, c := range map[string]struct {
		doc  string
		want []string
	}{
		"default to the client endpoints": {"endpoints: [https://10.0.0.1:2379, https://10.0.0.2:2379]",
			[]string{"https://10.0.0.1:2379", "https://10.0.0.2:2379"}},
		"kept when given": {"endpoints: [https://10.0.0.1:2379]\n    httpEndpoints: [https://10.0.0.1:2381]",
			[]string{"https://10.0.0.1:2381"}},
	} {
		t.Run(name, func(t *testing.T) {
			docs, err := Decode([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\netcd:\n  external:\n    "+c.doc+"\n"), Strict)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := fakeEnv().InitConfiguration(context.Background(), docs, DefaultOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Etcd.External.HTTPEndpoints; !slices.Equal(got, c.want) {
				t.Fatalf("httpEndpoints %v, want %v", got, c.want)
			}
		})
	}
}

func TestTooOldControlPlane(t *testing.T) {
	docs, _ := Decode([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.35.9\n"), Strict)
	_, err := fakeEnv().ClusterConfiguration(context.Background(), docs)
	if err == nil || !strings.Contains(err.Error(), "1.36.0") {
		t.Fatalf("want a too-old error naming the minimum, got %v", err)
	}
}

func TestCIVersionUsesCIRepository(t *testing.T) {
	env := fakeEnv()
	env.ResolveVersion = func(context.Context, string) (string, error) { return "v1.36.4-alpha.0.1+abc", nil }
	docs, _ := Decode([]byte("apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: ci/v1.36.4-alpha.0.1+abc\n"), Strict)
	cfg, err := env.ClusterConfiguration(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CIImageRepository == "" {
		t.Fatal("a ci/ version should select the CI image repository")
	}
}

func TestResolveErrorsPropagate(t *testing.T) {
	env := fakeEnv()
	env.ResolveVersion = func(context.Context, string) (string, error) { return "", errors.New("boom") }
	if _, err := env.ClusterConfiguration(context.Background(), nil); err == nil {
		t.Fatal("expected the resolver's error")
	}
}

func TestNthServiceIP(t *testing.T) {
	cases := map[string]string{
		"10.96.0.0/12":                  "10.96.0.10",
		"10.96.0.5/12":                  "10.96.0.10",
		"fd00:10:96::/112":              "fd00:10:96::a",
		"10.96.0.0/12,fd00:10:96::/112": "10.96.0.10",
		"::ffff:10.96.0.0/108":          "10.96.0.10",
	}
	for in, want := range cases {
		subnets, err := ParseSubnets(in)
		if err != nil {
			t.Fatalf("ParseSubnets(%q): %v", in, err)
		}
		ip, err := DNSServiceIP(subnets)
		if err != nil || ip.String() != want {
			t.Errorf("DNSServiceIP(%q) = %v, %v; want %s", in, ip, err, want)
		}
	}
	if _, err := DNSServiceIP([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/29")}); err == nil {
		t.Error("a /29 has no tenth address")
	}
	if _, err := DNSServiceIP(nil); err == nil {
		t.Error("expected an error without a service subnet")
	}
	for _, bad := range []string{"nope", "10.96.0.0/12,", "10.96.0.0/12, fd00::/112", ""} {
		if got, err := ParseSubnets(bad); err == nil {
			t.Errorf("ParseSubnets(%q) = %v, want an error", bad, got)
		}
	}
}

// TestSubnetsParsedOnce: defaulting leaves the subnets parsed in the
// configuration, for the phases to use, and leaves a list that does not
// parse empty for validation to report.
func TestSubnetsParsedOnce(t *testing.T) {
	docs := &Documents{Cluster: &v1beta4.ClusterConfiguration{Networking: v1beta4.Networking{
		ServiceSubnet: "10.96.0.0/12,fd00:10:96::/112",
		PodSubnet:     "192.168.0.0/16",
	}}}
	cfg, err := fakeEnv().InitConfiguration(context.Background(), docs, DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := kubeadm.Subnets{
		Service: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12"), netip.MustParsePrefix("fd00:10:96::/112")},
		Pod:     []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")},
	}
	if !reflect.DeepEqual(cfg.Subnets, want) {
		t.Errorf("subnets %v, want %v", cfg.Subnets, want)
	}
	if !cfg.AdvertiseIP.IsValid() || cfg.AdvertiseIP.String() != cfg.LocalAPIEndpoint.AdvertiseAddress {
		t.Errorf("advertise address %v, want the parsed %q", cfg.AdvertiseIP, cfg.LocalAPIEndpoint.AdvertiseAddress)
	}
	docs.Cluster.Networking.PodSubnet = "192.168.0.0/16,"
	cfg, err = fakeEnv().InitConfiguration(context.Background(), docs, DefaultOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Subnets.Pod != nil || len(cfg.Subnets.Service) != 2 {
		t.Errorf("a pod subnet that does not parse: subnets %v, want the service subnets only", cfg.Subnets)
	}
}

// TestEndpointParsedOnce: defaulting splits controlPlaneEndpoint into its
// parts, and validation judges the parts: the rule of upstream's hostport
// check.
func TestEndpointParsedOnce(t *testing.T) {
	parts := map[string]kubeadm.Endpoint{
		"":                   {},
		"lb":                 {Host: "lb"},
		"lb:6443":            {Host: "lb", Port: "6443"},
		"lb:":                {Host: "lb"},
		"lb:06443":           {Host: "lb", Port: "06443"},
		"10.0.0.1:443":       {Host: "10.0.0.1", Port: "443", Addr: netip.MustParseAddr("10.0.0.1")},
		"[FD00::1]:6443":     {Host: "FD00::1", Port: "6443", Addr: netip.MustParseAddr("fd00::1")},
		"fd00::1":            {Host: "fd00::1", Addr: netip.MustParseAddr("fd00::1")},
		"::ffff:192.0.2.5":   {Host: "::ffff:192.0.2.5", Addr: netip.MustParseAddr("192.0.2.5")},
		"[fd00::1]":          {Host: "[fd00::1]"},
		"fe80::1%eth0":       {Host: "fe80::1%eth0"},
		"https://lb:6443":    {Host: "https://lb:6443"},
		"[lb]:6443":          {Host: "lb", Port: "6443"},
		"1.2.3":              {Host: "1.2.3"},
		"01.2.3.4:1":         {Host: "01.2.3.4", Port: "1"},
		":6443":              {Port: "6443"},
		"lb.example.com:abc": {Host: "lb.example.com", Port: "abc"},
	}
	for in, want := range parts {
		if got := kubeadm.ParseEndpoint(in); got != want {
			t.Errorf("kubeadm.ParseEndpoint(%q) = %+v, want %+v", in, got, want)
		}
	}
	good := []string{"", "foo", "foo:6443", "1.2.3.4:6443", "[::1]:6443", "::1", "foo:", "[::1]:", "1.2.3", "foo:06443", "[foo]:6443", "01.2.3.4:1"}
	bad := []string{"foo:0", "foo:70000", "foo:abc", "foo:-1", "foo:+1", "foo: 1", "[::1]", "Foo", "Foo_Bar", "https://foo:6443", ":6443",
		"a..b", "-foo", "*.foo", "foo:6443:1", "[foo:1]:2", "fe80::1%eth0"}
	for _, s := range append(good, bad...) {
		docs := &Documents{Cluster: &v1beta4.ClusterConfiguration{ControlPlaneEndpoint: s}}
		cfg, err := fakeEnv().InitConfiguration(context.Background(), docs, DefaultOptions{})
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if cfg.Endpoint != kubeadm.ParseEndpoint(cfg.ControlPlaneEndpoint) {
			t.Errorf("%q: defaulting left the endpoint %q as %+v, want it parsed", s, cfg.ControlPlaneEndpoint, cfg.Endpoint)
		}
		err = validation.CheckControlPlaneEndpoint(&cfg.ClusterConfiguration)
		if slices.Contains(good, s) && err != nil {
			t.Errorf("%q refused: %v", s, err)
		}
		if slices.Contains(bad, s) && err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestEndpointGetsTheBindPort: as upstream's defaulting, an endpoint
// without a port (or with an empty one) gets the API server's bind port,
// its host as written; one that does not validate stays as written.
func TestEndpointGetsTheBindPort(t *testing.T) {
	for in, want := range map[string]string{
		"lb.example.test":      "lb.example.test:7443",
		"lb.example.test:":     "lb.example.test:7443",
		"lb.example.test:6443": "lb.example.test:6443",
		"FD00:0::10":           "[FD00:0::10]:7443",
		"[FD00:0::10]:":        "[FD00:0::10]:7443",
		"::ffff:192.0.2.5":     "[::ffff:192.0.2.5]:7443",
		"[lb]:":                "lb:7443",
		"LB":                   "LB",
		"[fd00::1]":            "[fd00::1]",
		"":                     "",
	} {
		docs := &Documents{
			Init:    &v1beta4.InitConfiguration{LocalAPIEndpoint: v1beta4.APIEndpoint{BindPort: 7443}},
			Cluster: &v1beta4.ClusterConfiguration{ControlPlaneEndpoint: in},
		}
		cfg, err := fakeEnv().InitConfiguration(context.Background(), docs, DefaultOptions{})
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if cfg.ControlPlaneEndpoint != want || cfg.Endpoint != kubeadm.ParseEndpoint(want) {
			t.Errorf("%q became %q (%+v), want %q", in, cfg.ControlPlaneEndpoint, cfg.Endpoint, want)
		}
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	cases := map[string]string{
		"apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\ncertificateValidityPeriod: forever\n":                          "certificateValidityPeriod:",
		"apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nbootstrapTokens:\n- token: abcdef.0123456789abcdef\n- token: x\n": "bootstrapTokens[1].token:",
		"apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\ntimeouts:\n  discovery: soon\n":                                   "timeouts.discovery:",
	}
	for in, want := range cases {
		_, err := Decode([]byte(in), Strict)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want it to name %q", err, want)
		}
	}
}

// TestAdvertiseAddressCanonical: the advertise address is written back in
// its canonical form once defaulted, so that every reader (certificates,
// kubeconfig files, manifests) parses the same thing, as upstream's
// kubeadm does with an address given with leading zeros or IPv4-mapped.
func TestAdvertiseAddressCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"010.0.0.1":       "10.0.0.1",
		"::ffff:10.0.0.2": "10.0.0.2",
		"FD00::0:1":       "fd00::1",
		"10.0.0.3":        "10.0.0.3",
	} {
		docs := &Documents{Init: &v1beta4.InitConfiguration{LocalAPIEndpoint: v1beta4.APIEndpoint{AdvertiseAddress: in}}}
		cfg, err := fakeEnv().InitConfiguration(context.Background(), docs, DefaultOptions{})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := cfg.LocalAPIEndpoint.AdvertiseAddress; got != want {
			t.Errorf("advertise address %q became %q, want %q", in, got, want)
		}
		if got := cfg.AdvertiseIP; got != netip.MustParseAddr(want) {
			t.Errorf("advertise address %q was parsed as %v, want %s", in, got, want)
		}
	}
}
