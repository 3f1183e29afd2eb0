# The two commands of the README: `make run` and `make test` (as root).
# Both install what they need first, so a fresh Debian/Ubuntu machine works.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PRESET ?= quick
DB ?= layerbench.db
# Where the YCSB client and its bindings are built (layerbench --cache-dir reads the same default).
CACHE ?= /var/cache/layerbench
APT_PACKAGES := fio xfsprogs btrfs-progs e2fsprogs fuse-overlayfs fuse3 util-linux \
	iproute2 kmod python3 python3-venv python3-pip ca-certificates podman \
	qemu-utils libnbd-bin nbd-client nvme-cli ethtool linux-perf
# (qemu-utils, libnbd-bin, nbd-client, nvme-cli, ethtool: the remote devices' servers, clients and link;
# linux-perf: `profile: cpu`. Ubuntu names it linux-tools-generic: on Ubuntu install that by hand.)
# Databases and their clients: layerbench starts its own servers, never the packages' services.
DB_APT_PACKAGES := postgresql postgresql-client redis-server redis-tools default-jdk-headless maven

# Only the tests need a browser (the HTML report is opened in headless Chromium; the results service is
# clicked through with Selenium and Debian's chromedriver, which matches its chromium).
TEST_APT_PACKAGES := chromium chromium-driver fonts-dejavu-core
# The local Kubernetes cluster's parts beside the Kubernetes binaries (make k8s builds those; gcc
# compiles the pause binary). etcd-server is installed without starting its service (a policy-rc.d).
K8S_APT_PACKAGES := etcd-server containerd containernetworking-plugins openssl gcc libc6-dev
# Ceph from the distribution (Debian 12: 16.2.15), for `device.remote.transport: rbd`: layerbench builds its
# own cluster from these daemons (stack/remote/ceph/) and starts none of the packages' services (a policy-rc.d).
CEPH_APT_PACKAGES := ceph-mon ceph-mgr ceph-osd ceph-common rbd-fuse
# The test VM (a modern host: systemd, cgroup v2, every kernel module), built once into the cache.
VM_APT_PACKAGES := qemu-system-x86 qemu-utils debootstrap

# Each tier's budget in seconds (docs/testing.md: what each tier proves, and its measured time). Past
# it, coreutils timeout sends pytest SIGTERM (--foreground, so Ctrl-C still reaches pytest):
# tests/deadlines.py writes every thread's stack and pytest tears down what it started; two minutes
# later, SIGKILL. Each test has its own deadline too (pyproject.toml). A budget is a deadline, not the
# tier's usual time: on a slow afternoon (2026-11-29: the unit tests and the long, VM and cluster tiers
# 12-46% slower than that morning) the long tier took 778 s and the VM tier 1,434 s beside the cluster's.
BUDGET_UNIT ?= 240
BUDGET_TEST ?= 750
BUDGET_LONG ?= 960
BUDGET_VM ?= 1680
BUDGET_K8S ?= 720
BUDGET_CEPH ?= 780
# The unit tests' processes (pytest-xdist): one per core, at most eight (each imports the analysis's libraries).
UNIT_WORKERS ?= $(shell n=$$(nproc); echo $$((n > 8 ? 8 : n)))
TIER := timeout --foreground --signal=TERM --kill-after=120
PYTEST := $(PY) -m pytest -q --durations=10

.PHONY: run test docs docs-serve test-long test-seeds test-vm test-k8s test-ceph bytecode vm-image setup apt apt-db apt-ceph apt-runtimes apt-test apt-vm apt-k8s venv ycsb cassandra ferretdb k8s iozone lint clean-env

run: setup
	$(VENV)/bin/layerbench run $(PRESET) --db $(DB)

# The documentation site (mkdocs.yml, docs/): `make docs` builds it into site/, `make docs-serve` serves
# it at http://127.0.0.1:8000 while you edit. `make test` builds it with --strict into a scratch directory
# (about 2 s): a broken link or anchor, or a page missing from the nav, fails the tests.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs
DOCS_STRICT = d=$$(mktemp -d) && $(MKDOCS) build --strict --site-dir $$d; rc=$$?; rm -rf $$d; exit $$rc

docs: venv
	$(MKDOCS) build --strict --site-dir site

docs-serve: venv
	$(MKDOCS) serve

# The unit tests first, on every core (pytest-xdist): they are pure computation on captured output and
# scratch directories, so they may share the machine; everything that starts daemons, mounts or measures
# runs after them, one test at a time (each judges what is left on the whole machine).
test: setup apt-test bytecode
	$(PY) -m ruff check src tests bench
	$(DOCS_STRICT)
	$(TIER) $(BUDGET_UNIT) $(PYTEST) -n $(UNIT_WORKERS) tests/unit
	$(TIER) $(BUDGET_TEST) $(PYTEST) --ignore=tests/unit --ignore=tests/vm --ignore=tests/seeds --ignore=tests/long --ignore=tests/k8s --ignore=tests/ceph

# The long tier, kept out of `make test` so that it stays near ten minutes: the seeds' databases end
# to end (tests/seeds: Cassandra natively, in Docker, and scaled: minutes of server start-ups; tests/long:
# PostgreSQL and Redis through the whole pipeline) and the relationships measured over many trials (tests/long). test-seeds is its former name.
test-long: setup apt-test bytecode
	$(TIER) $(BUDGET_LONG) $(PYTEST) tests/seeds tests/long

test-seeds: test-long

# The modern-host tier: tests/vm boots the test VM (cgroup v2, systemd, every kernel module) for one
# layerbench run of the kernel paths this host lacks, and runs the vm engines from here. About 10
# minutes to build the image the first time (cached after); under emulation, minutes per boot.
test-vm: setup apt-test bytecode vm-image
	$(TIER) $(BUDGET_VM) $(PYTEST) tests/vm

# The Kubernetes tier: tests/k8s brings up a three-node cluster on this host (tools/localcluster),
# runs cells as pods on it, and takes it down. Its Kubernetes is built once into the cache. The same
# tier brings up a three-node Docker Swarm (Debian's dockerd, from `make apt`) for the swarm engine.
test-k8s: setup apt-test bytecode apt-k8s k8s
	$(TIER) $(BUDGET_K8S) $(PYTEST) tests/k8s

# The Ceph tier: tests/ceph builds Ceph clusters of three OSDs here from the distribution's daemons (each
# OSD on a storage host of its own), runs fio through librbd and rbd-fuse, degraded and recovering, kills a run
# and cleans up; about 9 minutes, kept out of `make test` (each cluster takes both cores and about 3 GB of
# memory under load).
test-ceph: setup apt-test bytecode
	$(TIER) $(BUDGET_CEPH) $(PYTEST) tests/ceph

# Kubernetes v1.32.2 from the Go module proxy (tools/build-k8s.sh): minutes of compiling the first
# time (cached after). Go 1.23 or later, as for FerretDB.
k8s: apt-k8s
	@if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then \
	  echo "make: no Go (Kubernetes 1.32 needs Go 1.23 or later: unpack https://go.dev/dl/ into /usr/local)"; exit 3; fi
	tools/build-k8s.sh $(CACHE)

apt-k8s:
	@missing=""; for p in $(K8S_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  tools/with-policy-rc.sh sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$$@"' apt $$missing; \
	fi

vm-image: apt-vm venv
	HOST_PYTHON=$(PY) tools/vm/build-image.sh $(CACHE)

setup: apt apt-db apt-ceph apt-runtimes venv ycsb cassandra ferretdb iozone

# Debian's docker.io only where no dockerd is installed: a host with Docker's
# own packages (docker-ce) keeps them.
apt:
	@if [ "$$(id -u)" != 0 ]; then echo "make: run as root (layerbench mounts filesystems and starts daemons)"; exit 3; fi
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if ! command -v dockerd >/dev/null 2>&1; then missing="$$missing docker.io"; fi; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# Installed without starting their services (tools/with-policy-rc.sh: a policy-rc.d for the length of
# the install, removed on every way out, a pre-existing one kept and reported) and without
# PostgreSQL's default cluster (its setting removed by a trap on every way out): a system server
# would compete with every measurement.
apt-db:
	@missing=""; for p in $(DB_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; nocluster=/etc/postgresql-common/createcluster.d/layerbench.conf; \
	  trap 'rm -f $$nocluster' EXIT; trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP; \
	  mkdir -p $$(dirname $$nocluster); echo 'create_main_cluster = false' > $$nocluster; \
	  tools/with-policy-rc.sh sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$$@"' apt $$missing; \
	fi

# Ceph's daemons and clients, installed as the databases are: no service started (tools/with-policy-rc.sh).
apt-ceph:
	@missing=""; for p in $(CEPH_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  tools/with-policy-rc.sh sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$$@"' apt $$missing; \
	fi

# The YCSB client (core 0.17.0 from Maven Central) and layerbench's own bindings; offline once built.
ycsb: apt-db
	java/build-ycsb.sh $(CACHE)

# Apache Cassandra 5.0 (cassandra-all and its dependencies from Maven Central, about 67 MB), run
# from its jars with the host's JDK; offline once fetched.
cassandra: apt-db
	java/fetch-cassandra.sh $(CACHE)

# FerretDB 1.24 (MongoDB's wire protocol on SQLite: no MongoDB server can be had without a registry),
# layerbench's wrapper in tools/ferretdb built with Go from the Go module proxy; offline once built.
# Go 1.24 or later (Debian 12's golang-go is 1.19): the official tarball in /usr/local/go (https://go.dev/dl/).
ferretdb:
	@if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then \
	  echo "make: no Go (FerretDB needs Go 1.24 or later: unpack https://go.dev/dl/go1.24.x.linux-amd64.tar.gz into /usr/local)"; exit 3; fi
	tools/build-ferretdb.sh $(CACHE)

# IOzone itself (iozone3: Debian's non-free, Ubuntu's multiverse), unpacked into the cache without
# changing apt's configuration. Optional: without it layerbench refuses iozone workloads and says why.
iozone:
	@tools/fetch-iozone.sh $(CACHE) || echo "make: no IOzone (the reason is above); iozone workloads will be refused"

# The OCI runtimes beside runc (`engine: {kind: docker, runtime: crun|runsc}`): crun and gVisor's runsc.
# Optional, one by one: a distribution without one (Ubuntu has no runsc package) refuses its cells and says why.
RUNTIME_APT_PACKAGES := crun runsc
apt-runtimes: apt
	@for p in $(RUNTIME_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 && continue; \
	  echo "installing: $$p"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$p \
	    || echo "make: no $$p here; cells with runtime $$p will be refused"; \
	done

apt-vm:
	@missing=""; for p in $(VM_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

apt-test:
	@missing=""; for p in $(TEST_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

venv: $(VENV)/.installed

# uv installs the same hash-checked lock as pip would, in seconds where pip took 40 (measured on a fresh
# clone, both from their caches): make test and CI make this environment on every fresh checkout.
# --compile-bytecode, as pip does: where PYTHONDONTWRITEBYTECODE is set (CI's environment here), nothing
# else ever writes the .pyc files, and every process compiled what it imported (the test tier took 25% longer).
$(VENV)/.installed: requirements.lock requirements-uv.lock pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --require-hashes -r requirements-uv.lock
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) --require-hashes -r requirements.lock
	$(VENV)/bin/uv pip install -q --python $(PY) --no-deps -e .
	touch $@

# layerbench's own modules compiled before the tests: where PYTHONDONTWRITEBYTECODE is set (CI's environment
# here), every layerbench process a test starts compiled them again, 0.1-0.2 s each (measured). A module
# edited since is compiled from its source when read, as without this.
bytecode: venv
	@$(PY) -m compileall -q src >/dev/null

lint: venv
	$(PY) -m ruff check src tests bench
	$(PY) -m ruff format --check src tests bench

clean-env:
	rm -rf $(VENV)
