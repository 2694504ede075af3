package etcd

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeadm-go/kubeadm/internal/staticpod"
)

// ClientURLsAnnotation is the annotation of an etcd static Pod that holds the
// client URLs its member advertises, separated by commas.
const ClientURLsAnnotation = staticpod.AnnotationEtcdClientURLs

// podSelector selects kubeadm's etcd static Pods (their mirror Pods in the
// API server).
func podSelector() string {
	return labels.SelectorFromSet(labels.Set{"component": staticpod.Etcd, "tier": "control-plane"}).String()
}

// ClientURLs returns the client URLs of the existing etcd members, read from
// the annotation of every etcd static Pod in kube-system, without
// duplicates and in the order of the Pods' names. It makes one request,
// bounded by ctx; a Pod without the annotation, a URL that does not parse,
// or no Pod at all is an error, since a cluster kubeadm made has one on
// every control-plane node.
func ClientURLs(ctx context.Context, c kubernetes.Interface) ([]string, error) {
	pods, err := c.CoreV1().Pods(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: podSelector()})
	if err != nil {
		return nil, fmt.Errorf("listing the etcd Pods in %s: %w", metav1.NamespaceSystem, err)
	}
	items := pods.Items
	slices.SortFunc(items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var urls []string
	for _, p := range items {
		value, ok := p.Annotations[ClientURLsAnnotation]
		if !ok {
			return nil, fmt.Errorf("etcd Pod %s/%s has no %s annotation, so its client URL is unknown", p.Namespace, p.Name, ClientURLsAnnotation)
		}
		parsed, err := ParseClientURLs(value)
		if err != nil {
			return nil, fmt.Errorf("etcd Pod %s/%s: annotation %s: %w", p.Namespace, p.Name, ClientURLsAnnotation, err)
		}
		for _, u := range parsed {
			if !slices.Contains(urls, u) {
				urls = append(urls, u)
			}
		}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("no etcd Pod with labels %s in %s: cannot tell where the etcd cluster is", podSelector(), metav1.NamespaceSystem)
	}
	return urls, nil
}

// ParseClientURLs splits the value of ClientURLsAnnotation (one URL or
// several separated by commas, spaces around them ignored) and checks each
// URL with CheckURL. An empty value is an error.
func ParseClientURLs(value string) ([]string, error) {
	var urls []string
	for _, part := range strings.Split(value, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if err := CheckURL(part); err != nil {
			return nil, err
		}
		urls = append(urls, part)
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("no URL in %q", value)
	}
	return urls, nil
}

// CheckURL reports whether raw is a URL etcd accepts for a member: http or
// https, a host and a port, and nothing else (no path, query, fragment or
// user).
func CheckURL(raw string) error {
	if !strings.Contains(raw, "://") {
		return fmt.Errorf("etcd URL %q: want a scheme, a host and a port (https://host:port)", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("etcd URL %q: %w", raw, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("etcd URL %q: scheme must be https or http", raw)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("etcd URL %q: want a host and a port", raw)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return fmt.Errorf("etcd URL %q: only a scheme, a host and a port are allowed", raw)
	}
	return nil
}

// sameURL reports whether two member URLs name the same place: the scheme
// and host compared without regard to case, IP addresses in any spelling,
// a trailing slash ignored.
func sameURL(a, b string) bool {
	return normalURL(a) == normalURL(b)
}

func normalURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return raw
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(host), port)
}

// StackedClientURLs returns the client URLs of stacked etcd members that no
// Pod describes (a control plane of host processes): https://ADDRESS:2379
// for every ready address of the kubernetes Service's EndpointSlices,
// which are the API servers' advertise addresses, where each one's etcd
// member listens too. One request, bounded by ctx; none is an error.
func StackedClientURLs(ctx context.Context, c kubernetes.Interface) ([]string, error) {
	list, err := c.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
	if err != nil {
		return nil, fmt.Errorf("listing the kubernetes Service's EndpointSlices: %w", err)
	}
	var urls []string
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				u := "https://" + net.JoinHostPort(a, strconv.Itoa(staticpod.EtcdClientPort))
				if !slices.Contains(urls, u) {
					urls = append(urls, u)
				}
			}
		}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("the kubernetes Service has no ready endpoint: cannot tell where the etcd cluster is")
	}
	return urls, nil
}
