#!/usr/bin/env bash
# Python suite, on the GPU machine: install the Python package from this tree into a virtual environment that
# also sees the machine's torch and torch_geometric (--system-site-packages), offline from .deps/wheels; run its
# pytest suite (the tests comparing with the CLI are deselected: no CLI is built here), then
# bench/peer/python_side_by_side.py (PyG and gcnpart in one process on the GPU: Cora at hidden 16 and 256, RMAT 18
# at 2 and 3 layers; epoch time, peak memory, test accuracy). About 5-8 minutes: the pip build compiles the
# libraries once (sm_90 only).
#   device: . .deps/env.sh && OUT=$OUT bash bench/run/python.sh        (carry .deps)
# Parameters: OUT (default /tmp/out: gpu.txt, pip and pytest logs, ldd.txt, python-side-by-side.json,
# side-by-side.log), VENV (default /tmp/gcnpart-venv), COMPILER=keep (build with the PATH compiler, not /usr/bin/g++).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-/tmp/out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
venv=${VENV:-/tmp/gcnpart-venv}
python3 -m venv --system-site-packages "$venv"
# When python3 is itself a virtual environment (the GPU image's torch venv), --system-site-packages reaches only its
# base interpreter: a .pth file makes that environment's packages (torch, torch_geometric, numpy) visible too.
python3 -c 'import site; print("\n".join(site.getsitepackages()))' > "$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')/gcnpart-host-packages.pth"
pip=("$venv/bin/pip" install --disable-pip-version-check --no-index --find-links .deps/wheels)
"$venv/bin/python" -c 'import nanobind, scikit_build_core, pytest' 2>/dev/null ||
  "${pip[@]}" nanobind scikit-build-core pytest > "$out/pip-deps.log" 2>&1 || { tail -20 "$out/pip-deps.log"; exit 1; }
t0=$(date +%s)
# The module is a shared object: it needs a position-independent zlib. The carried Debian packages (.deps) hold a
# static libz.a, which CMake would take when their shared library is not next to it: use the machine's libz.so.1.
zlib=""
for z in /usr/lib/x86_64-linux-gnu/libz.so.1 /lib/x86_64-linux-gnu/libz.so.1; do
  [ -e "$z" ] && { zlib="-DZLIB_LIBRARY=$z -DZLIB_LIBRARY_RELEASE=$z"; break; }
done
# The first run (2026-12-01) built with /opt/gcc's g++ and crashed in gcnpart.rmat() / Dataset.info() while the
# system libstdc++ / libgomp were loaded: build with the system compiler when there is one (COMPILER=keep: as is).
build_package() {
  rm -rf build/python  # a compiler or zlib choice of an earlier call must not stick
  CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=90 $zlib" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
    "${pip[@]}" --no-build-isolation --force-reinstall --no-deps -v . > "$out/pip-build.log" 2>&1
}
built=no
if [ "${COMPILER:-system}" = system ] && [ -x /usr/bin/g++ ]; then
  echo "compiler: $(/usr/bin/g++ --version | head -1) (system)"
  # shellcheck disable=SC2015  # the message only when the build failed (built=yes cannot fail)
  CXX=/usr/bin/g++ CC=/usr/bin/gcc CUDAHOSTCXX=/usr/bin/g++ build_package && built=yes ||
    { echo "system compiler build failed:"; grep -E "error" "$out/pip-build.log" | head -10; }
fi
if [ $built = no ]; then
  echo "compiler: $(g++ --version | head -1) (PATH)"
  build_package || { grep -E "error|Error" "$out/pip-build.log" | head -40; exit 1; }
fi
echo "pip install .: $(( $(date +%s) - t0 )) s"
cd /tmp || exit 1  # import the installed package, not the source folder
so=$(find "$venv"/lib/python3*/site-packages/gcnpart -name "_core*.so" 2>/dev/null | head -1)
[ -n "$so" ] && ldd "$so" | grep -E "gomp|stdc\+\+|libz|metis|cuda" | tee "$out/ldd.txt"
# The calls that crashed in the first run, each in a process of its own, with a native backtrace when gdb exists.
for call in "gcnpart.rmat(10, features=8, classes=4)" "gcnpart.load('demo').info()"; do
  if "$venv/bin/python" -X faulthandler -c "import gcnpart; $call" > "$out/probe.log" 2>&1; then
    echo "probe ok: $call"
  else
    echo "probe FAILED: $call"; tail -5 "$out/probe.log"
    command -v gdb > /dev/null && gdb -batch -ex run -ex bt --args "$venv/bin/python" -c "import gcnpart; $call" 2>&1 |
      tail -25 | tee -a "$out/probe-backtrace.log"
  fi
done
"$venv/bin/python" -c 'import gcnpart, torch, torch_geometric; print("gcnpart", gcnpart.__version__, "cuda devices:", gcnpart._core.cuda_device_count(), "torch", torch.__version__, "pyg", torch_geometric.__version__)'
"$venv/bin/python" -m pytest -q -m "not cli" -p no:cacheprovider --rootdir "$OLDPWD" "$OLDPWD/tests/tools/python" 2>&1 |
  tee "$out/pytest.log" | tail -15
cd "$OLDPWD" || exit 1
"$venv/bin/python" bench/peer/python_side_by_side.py --json "$out/python-side-by-side.json" 2>&1 | tee "$out/side-by-side.log"
