#!/usr/bin/env bash
# Installs the Debian 12 packages a fresh machine lacks. Idempotent; needs root
# (or sudo) and Debian's package registry. SETUP_FOR=run (scripts/quickstart.sh)
# leaves out what only the tests use: the browser, and MPICH's mpiexec and
# Slurm (tests/launchers start a one-node cluster; Open MPI stays the
# default mpirun and the MPI the agent links).
set -euo pipefail
PKGS=(build-essential cmake pkg-config ninja-build git ccache clang-14 libclang-rt-14-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      libopenmpi-dev openmpi-bin libzmq3-dev cppzmq-dev capnproto libcapnp-dev
      libspdlog-dev libfmt-dev nlohmann-json3-dev libcli11-dev libxxhash-dev libzstd-dev libsqlite3-dev zlib1g-dev
      graphviz protobuf-compiler
      libjs-chart.js
      pybind11-dev python3-dev python3-pytest python3-jsonschema help2man dpkg-dev
      iproute2 util-linux)
# The tests also use systemd-analyze (the agent's systemd unit) and binutils'
# strings/nm (no fault hook in a release build).
[ "${SETUP_FOR:-test}" = run ] || PKGS+=(chromium mpich slurm-wlm munge systemd binutils)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
