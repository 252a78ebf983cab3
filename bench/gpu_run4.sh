set -uo pipefail
. .deps/env.sh
o=/tmp/o; mkdir -p $o
cmake --preset gpu > $o/configure.log 2>&1 || { tail -20 $o/configure.log; exit 1; }
cmake --build --preset gpu -j 16 > $o/build.log 2>&1 || { grep error $o/build.log | head -30; exit 1; }
ctest --preset gpu --output-on-failure > $o/ctest_gpu.log 2>&1; tail -12 $o/ctest_gpu.log
STEP_TIMEOUT=150 OUT=$o bench/peer/run.sh > $o/run.log 2>&1; tail -40 $o/run.log
g=build/gpu/tools/gcnpart
for T in 128 2048; do for name in arxiv products; do
  f=$(ls /tmp/gcnpart-$name-*.gcsr)
  $g -q bench spmm $f --widths 16,64,256 --spmm own --spmm-long-row $T --json $o/spmm-$name-T$T.json > $o/spmm-$name-T$T.log 2>&1
  echo "T=$T $name"; grep -E "^ *(16|64|256) +own " $o/spmm-$name-T$T.log
done; done
tar czf $OUT/r4.tgz -C $o .
