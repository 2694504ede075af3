// Package initphases holds the phases of "kubeadm init" as data for the
// workflow runner, and the Data they share. Each phase re-detects what is
// already on disk and converges: running it twice, or after it was
// interrupted, leaves the same files.
package initphases
