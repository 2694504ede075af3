// Package redirectpolicy holds the rules for the HTTP redirects kubeadm
// follows, as http.Client.CheckRedirect functions. Go's default follows up
// to ten redirects anywhere, from https to plain http included: an
// https discovery file could then be read, and trusted, from a server no
// certificate vouched for.
//
//   - SameHost, for every URL the user gives that leads to a trust
//     decision or carries credentials (a discovery file, an API server, an
//     external etcd, a component's health endpoint): a redirect must keep
//     to the same host and port, and never leave https.
//   - NoDowngrade, for downloads whose content is checked on its own terms
//     (the version labels of dl.k8s.io, which is served through a CDN on
//     other hosts): a redirect may change the host, never leave https.
//
// Both stop after MaxRedirects. A refused redirect fails the request with
// an error that wraps ErrRefused and names both URLs.
package redirectpolicy
