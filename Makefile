# Top-level developer targets.
GO ?= go

.PHONY: build test compat upstream bench bench-init integration testbed testbed-base e2e e2e-full conformance

# Built as upstream's release binaries are: static (no cgo), without the
# symbol table and debug information, with module-relative paths. A static
# binary also starts faster (no dynamic loader) and maps less memory.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w" -o bin/kubeadm ./cmd/kubeadm

test:
	$(GO) test -short ./...

# Builds (once, cached under .cache/upstream) the pinned upstream kubeadm used
# as the oracle by the compatibility check.
upstream:
	hack/build-upstream.sh kubeadm

# Compares our kubeadm with upstream kubeadm v1.37.2 on testdata/config/*.
# Building upstream the first time is slow; it is done before the test so the
# test's own timeout only covers the comparisons.
compat: upstream
	$(GO) test -tags compat ./test/compat/ -count=1 -v -timeout 30m

# Runs the offline init phases with our kubeadm and upstream's side by side
# and prints wall, CPU and peak memory (figures go to docs/performance.md).
bench: build upstream
	$(GO) run ./hack/benchoffline -ours bin/kubeadm -upstream .cache/upstream/v1.37.2/kubeadm -rounds 31

# Fast-tier integration tests: the real etcd, kube-apiserver and
# kube-controller-manager run as host processes from the files our kubeadm
# writes (test/controlplane). Needs root; see docs/integration.md.
integration:
	hack/build-upstream.sh kube-apiserver kube-controller-manager kube-scheduler etcd etcdutl
	KUBEADM_INTEGRATION=1 $(GO) test ./test/integration/ -count=1 -v

# Installs what the node test bed needs and builds upstream binaries, our
# programs and the images, of the deployed version and of the one the
# upgrade test starts from (slow only the first time). See docs/testbed.md.
# testbed-base leaves out the release the upgrade tests start from.
testbed:
	$(GO) run ./hack/testbed prepare

testbed-base:
	$(GO) run ./hack/testbed prepare --upgrade-from=

# End-to-end tests on real nodes of the test bed, as CI runs them. Needs
# root.
e2e: testbed-base
	KUBEADM_E2E=1 $(GO) test ./test/testbed/ ./test/e2e/ -count=1 -v -timeout 60m

# Every end-to-end test, the long ones CI leaves out included (about an
# hour more; the latest full run is recorded in docs/testbed.md).
e2e-full: testbed
	KUBEADM_E2E=1 KUBEADM_E2E_FULL=1 $(GO) test ./test/testbed/ ./test/e2e/ -count=1 -v -timeout 150m

# Upstream's [Conformance] suite on a five-node cluster our kubeadm makes
# (three control-plane nodes, two workers): the parallel specs, then the
# [Serial] ones; reports in _artifacts/conformance/. About an hour here; see
# docs/conformance.md. KUBEADM_E2E_KUBEADM=.cache/upstream/v1.37.2/kubeadm
# runs it on a cluster upstream's kubeadm makes.
conformance: testbed-base
	KUBEADM_E2E=1 KUBEADM_E2E_CONFORMANCE=full $(GO) test ./test/e2e/ -run '^TestConformance$$' -count=1 -v -timeout 6h

# Real kubeadm init, ours and upstream's side by side on fresh test-bed
# nodes (root). Figures go to docs/performance.md.
bench-init: testbed upstream
	$(GO) run ./hack/benchinit -rounds 5
