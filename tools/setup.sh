# Sourced by tools/run and tools/test: install missing Debian packages, configure and build a preset.
# Idempotent and incremental: a second call installs nothing and rebuilds only what changed.
set -euo pipefail
GCNPART_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$GCNPART_ROOT"

gcnpart_packages=(cmake ninja-build g++ ccache pkg-config zlib1g-dev libmetis-dev doctest-dev libcli11-dev
                  nlohmann-json3-dev libopenmpi-dev openmpi-bin python3
                  clang libclang-rt-14-dev libomp-dev)  # the last three for tools/fuzz

# gcnpart_install_list PACKAGE...: apt-get installs those of the Debian packages that are missing.
gcnpart_install_list() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "tools: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  fi
}

gcnpart_install_missing() {
  gcnpart_install_list "${gcnpart_packages[@]}"
  # The CUDA toolkit is not a Debian package here: without nvcc, CMake configures a CPU-only gcnpart and says so.
  if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
    echo "tools: nvcc not found: building a CPU-only gcnpart (install the CUDA toolkit 13.x at /usr/local/cuda" \
         "for GPUs)" >&2
  fi
}

# gcnpart_install PRESET: copies the built gcnpart to ${GCNPART_PREFIX:-~/.local}/bin (cmake --install) and prints
# where it is; a prefix that cannot be written is reported, not fatal (the binary stays in build/PRESET/tools).
gcnpart_install() {
  local preset=$1 prefix=${GCNPART_PREFIX:-$HOME/.local}
  if cmake --install "build/$preset" --prefix "$prefix" >/dev/null 2>&1; then
    echo "tools: installed $prefix/bin/gcnpart" >&2
    case ":$PATH:" in
      *":$prefix/bin:"*) ;;
      *) echo "tools: $prefix/bin is not on PATH: add it (export PATH=\"$prefix/bin:\$PATH\") or run" \
              "$prefix/bin/gcnpart" >&2 ;;
    esac
  else
    echo "tools: could not install into $prefix (set GCNPART_PREFIX); the binary is build/$preset/tools/gcnpart" >&2
  fi
}

# gcnpart_gpu_visible: true when nvidia-smi lists a GPU.
gcnpart_gpu_visible() {
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1
}

# gcnpart_configure PRESET [-DVAR=VALUE...]: configures the preset with those cache values, again when one of them
# differs from the build folder's cache (a folder configured for CUDA that tools/run now builds CPU-only).
gcnpart_configure() {
  local preset=$1; shift
  local cache="build/$preset/CMakeCache.txt" stale=0
  [ -f "build/$preset/build.ninja" ] || stale=1
  for d in "$@"; do
    local kv=${d#-D} name value
    name=${kv%%=*}
    value=${kv#*=}
    grep -q "^$name:[A-Z]*=$value\$" "$cache" 2>/dev/null || stale=1
  done
  [ $stale -eq 0 ] || cmake --preset "$preset" "$@" >&2
}

# gcnpart_build PRESET [targets...]
gcnpart_build() {
  local preset=$1; shift
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/gcnpart-ccache}
  # Paths inside the checkout hash relative to it, so clones in other folders (CI, worktrees) share the cache.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$GCNPART_ROOT}
  # Build with all cores but keep memory in check (nvcc is hungry).
  local jobs
  jobs=$(nproc)
  if [ ! -f "build/$preset/build.ninja" ]; then
    cmake --preset "$preset" >&2
  fi
  cmake --build --preset "$preset" -j "$jobs" "$@" >&2
}

# gcnpart_python_env: the Python package installed from this tree into .venv (what docs/python.md's
# `python3 -m venv .venv && .venv/bin/pip install .` does), with numpy from Debian and nanobind, scikit-build-core
# and pytest from PyPI, or from .deps/wheels when that folder exists (machines without a registry). The build
# folder build/python persists and goes through ccache, so a second call recompiles only what changed.
gcnpart_python_env() {
  gcnpart_install_list python3-venv python3-dev python3-numpy
  [ -x .venv/bin/python ] || /usr/bin/python3 -m venv --system-site-packages .venv
  local pip=(.venv/bin/pip install -q --disable-pip-version-check)
  [ -d .deps/wheels ] && pip+=(--no-index --find-links .deps/wheels)
  .venv/bin/python -c 'import nanobind, scikit_build_core, pytest' 2>/dev/null ||
    "${pip[@]}" nanobind scikit-build-core pytest >&2
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/gcnpart-ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$GCNPART_ROOT}
  # Where no GPU is visible (CI), the package the tests use is built without CUDA: the CPU tests do not need it and
  # nvcc would compile the kernels a second time (position-independent). `pip install .` itself keeps AUTO.
  local cuda="-DCMAKE_CUDA_ARCHITECTURES=90"
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 || cuda="-DGCNPART_CUDA=OFF"
  CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
    CMAKE_ARGS="${CMAKE_ARGS:-$cuda}" "${pip[@]}" --no-build-isolation . >&2
}
