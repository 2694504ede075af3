// Package noderole marks a Node object as a control-plane node: the
// labels upstream kubeadm v1.36.3 sets on control-plane nodes and the
// taints the configuration asks for, applied with an optimistic-concurrency
// patch so that they merge with whatever the kubelet and the controllers
// write to the same Node meanwhile.
package noderole
