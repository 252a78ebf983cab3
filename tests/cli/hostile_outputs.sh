#!/usr/bin/env bash
# Issue 18: gcnpart behaves like a careful Unix tool with hostile outputs, pipes and signals. Each check prints one
# line; the first failure ends the script. Usage: hostile_outputs.sh GCNPART_BINARY
set -uo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
passed=0
ok() { echo "ok: $*"; passed=$((passed + 1)); }
fail() { echo "FAILED: $*"; exit 1; }
json_ok() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1"; }

# --threads is bounded (100000 segfaulted inside libgomp).
out=$("$bin" --threads 100000 info demo 2>&1); rc=$?
[ $rc -eq 2 ] && [[ $out == *"not in range 1 to 4096"* ]] || fail "--threads 100000: exit $rc: $out"
ok "--threads 100000 is refused with its range"

# A symbolic link is followed: the file it names is replaced, the link stays.
echo old > real.json && ln -s real.json link.json
"$bin" -q info demo --json link.json > /dev/null || fail "info --json through a symlink"
[ -L link.json ] && json_ok real.json || fail "the symlink was replaced or its target not written"
ok "--json through a symbolic link writes the target and keeps the link"

# Devices and descriptors are written in place, never replaced by a regular file.
"$bin" -q info demo --json /dev/null > /dev/null || fail "--json /dev/null"
[ -c /dev/null ] || fail "/dev/null is no longer a character device"
"$bin" -q info demo --json /dev/stdout > stdout.json || fail "--json /dev/stdout"
json_ok stdout.json || fail "--json /dev/stdout did not write JSON to stdout"
"$bin" -q info demo --json /dev/full > /dev/null 2> full.err; rc=$?
[ $rc -eq 4 ] && grep -q "No space left on device" full.err || fail "--json /dev/full: exit $rc, $(cat full.err)"
if [ "$(id -u)" = 0 ] && mknod null-clone c 1 3 2> /dev/null; then
  "$bin" -q info demo --json null-clone > /dev/null && [ -c null-clone ] || fail "a clone of /dev/null was replaced"
fi
ok "/dev/null, /dev/stdout and /dev/full are written in place (ENOSPC reported, exit 4)"

# '-' means stdout for every --json; train and compare then print only the JSON there.
"$bin" -q train demo --epochs 2 --json - > train.json 2> train.err || fail "train --json -: $(cat train.err)"
json_ok train.json || fail "train --json - printed more than JSON on stdout: $(head -3 train.json)"
grep -q "^accuracy" train.err || fail "train --json -: the human lines did not go to stderr"
"$bin" -q compare demo --parts 2 --layers 2 --strategies halo --measure-epochs 1 --json - > cmp.json 2> cmp.err ||
  fail "compare --json -: $(cat cmp.err)"
json_ok cmp.json || fail "compare --json - printed more than JSON on stdout"
"$bin" -q convert demo demo.gcsr --json - > conv.json 2> /dev/null || fail "convert --json -"
json_ok conv.json || fail "convert --json - printed more than JSON on stdout"
ok "--json - gives stdout to the JSON alone (train, compare, convert)"

# Pipes: a FIFO is read as a stream; an output FIFO is written in place.
mkfifo in.txt
printf '0 1\n1 2\n2 0\n' > in.txt &
"$bin" -q info in.txt --json in.json > /dev/null || fail "reading a FIFO"
python3 -c 'import json; assert json.load(open("in.json"))["nodes"] == 3' || fail "the FIFO's graph"
mkfifo out.gcsr
cat out.gcsr > via-fifo.gcsr &
reader=$!
"$bin" -q convert demo out.gcsr > /dev/null || fail "convert into a FIFO"
wait $reader
[ -p out.gcsr ] && cmp -s via-fifo.gcsr demo.gcsr || fail "the FIFO was replaced or carried other bytes"
ok "FIFOs: read as a stream, written in place"

# Output paths are checked before any work: a long run fails at once.
start=$(date +%s)
"$bin" -q train demo --epochs 100000 --json /nonexistent-gcnpart/r.json > /dev/null 2> early.err; rc=$?
[ $rc -eq 4 ] && [ $(($(date +%s) - start)) -lt 20 ] || fail "a bad --json path was not refused first: exit $rc"
"$bin" -q train demo --epochs 100000 --reorder none --save-plan /nonexistent-gcnpart/p.gplan > /dev/null 2>&1; rc=$?
[ $rc -eq 4 ] || fail "a bad --save-plan path: exit $rc"
ok "output paths are refused before the first epoch"

# SIGINT / SIGTERM during a write: temporaries removed, exit 130 / 143; a dead writer's leftovers are cleared.
python3 - "$bin" <<'PY' || fail "signals during generate"
import glob, os, signal, subprocess, sys, time
gcnpart = sys.argv[1]
for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
    d = f"sig{int(sig)}"
    os.mkdir(d)
    out = os.path.join(d, "g.gcsr")
    p = subprocess.Popen([gcnpart, "-q", "generate", "rmat", "--scale", "18", "--edge-factor", "16", "--features",
                          "64", "--classes", "4", "-o", out], stderr=subprocess.PIPE)
    for _ in range(6000):
        if glob.glob(out + ".tmp.*"):
            break
        time.sleep(0.005)
    else:
        sys.exit("the temporary never appeared")
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == code, (sig, p.returncode, err)
    assert b"unfinished output files removed" in err, err
    assert os.listdir(d) == [], os.listdir(d)
PY
child=$(sh -c 'echo $$')  # a pid that has exited
: > stale.gcsr.tmp.$child && : > stale.gcsr.lock
"$bin" -q convert demo stale.gcsr > /dev/null || fail "convert over a dead writer's leftovers"
[ ! -e stale.gcsr.tmp.$child ] && [ ! -e stale.gcsr.lock ] || fail "a dead writer's temporary or lock was left"
ok "SIGINT -> 130, SIGTERM -> 143 without temporaries; a dead writer's OUT.tmp.<pid> and OUT.lock are cleared"

# The partition can be taken out: a binary plan and one part id per line.
"$bin" -q train demo --epochs 1 --strategy halo --parts 3 --reorder none --save-plan p.gplan --save-parts p.parts > /dev/null 2>&1 ||
  fail "train --save-plan/--save-parts"
python3 - <<'PY' || fail "the node -> part file"
parts = [int(l) for l in open("p.parts")]
assert len(parts) == 10000 and set(parts) == {0, 1, 2}, (len(parts), set(parts))
assert open("p.gplan", "rb").read(8) == b"GCNPPLAN"
PY
"$bin" -q compare demo --parts 2 --layers 2 --strategies halo,gather --measure-epochs 1 --save-plan plans > /dev/null ||
  fail "compare --save-plan"
for f in halo-k2-l2.gplan halo-k2-l2.parts gather-k2-l2.gplan gather-k2-l2.parts; do
  [ -s "plans/$f" ] || fail "compare --save-plan did not write plans/$f"
done
ok "--save-plan / --save-parts write the plan and the node -> part text (train and compare)"

# Options that do nothing on the CPU say so; dataset names cannot drive the terminal.
"$bin" -q train demo --epochs 1 --spmm cusparse > /dev/null 2> warn.err || fail "train --spmm cusparse on the CPU"
grep -q "gcnpart: warning: --spmm cusparse has no effect on the CPU" warn.err || fail "no warning: $(cat warn.err)"
name=$(printf 'evil\033[2J')
printf '0 1\n1 2\n' > "$name.txt"
"$bin" -q info "$name.txt" > info.out || fail "info on a file named with an escape sequence"
grep -q $'\033' info.out && fail "an escape sequence reached the terminal"
grep -qF 'evil\x1b[2J' info.out || fail "the name was not shown escaped: $(head -2 info.out)"
ok "no-op options warn; escape sequences in names are shown escaped"

# Issue 37: two outputs on one path are refused before any work; a write error on stdout is not exit 0.
"$bin" -q train demo --epochs 1 --save same.out --json same.out > /dev/null 2> same.err; rc=$?
[ $rc -ne 0 ] && grep -q -- "--json" same.err && grep -q -- "--save" same.err && [ ! -e same.out ] ||
  fail "--save X --json X: exit $rc, $(cat same.err)"
"$bin" -q compare demo --parts 2 --layers 2 --strategies halo --json ./r.out --html r.out > /dev/null 2> same2.err; rc=$?
[ $rc -ne 0 ] && grep -q -- "--html" same2.err || fail "--json ./X --html X: exit $rc, $(cat same2.err)"
"$bin" -q info demo --json - > /dev/full 2> stdout-full.err; rc=$?
[ $rc -eq 4 ] && grep -q "standard output" stdout-full.err || fail "--json - > /dev/full: exit $rc, $(cat stdout-full.err)"
ok "two outputs on one path are refused; --json - into a full device exits 4"

# Issue 37: an output on the input's path, or inside an input dataset folder, is refused before any work.
printf '0 1\n1 2\n2 0\n' > g.txt
cp g.txt g.keep
"$bin" -q info g.txt --json g.txt > /dev/null 2> in1.err; rc=$?
[ $rc -ne 0 ] && cmp -s g.txt g.keep && grep -q "input DATA" in1.err || fail "info X --json X: exit $rc, $(cat in1.err)"
"$bin" -q convert g.txt ./g.txt > /dev/null 2> in2.err; rc=$?
[ $rc -ne 0 ] && cmp -s g.txt g.keep || fail "convert X X: exit $rc, $(cat in2.err)"
mkdir -p ogbset && cp -r "$here/../data/ogb/tiny/." ogbset/ 2> /dev/null
if [ -d ogbset/raw ]; then
  "$bin" -q info ogbset --json ogbset/raw/summary.json > /dev/null 2> in3.err; rc=$?
  [ $rc -ne 0 ] && [ ! -e ogbset/raw/summary.json ] || fail "--json inside the dataset folder: exit $rc, $(cat in3.err)"
fi
ok "outputs on an input file or inside an input folder are refused, the input untouched"

# Issue 37: an error is the last thing printed (no run line before it, no table header after it).
"$bin" train g.txt --epochs 1 > first.out 2> first.err; rc=$?
[ $rc -ne 0 ] && [ ! -s first.out ] && [ "$(wc -l < first.err)" -eq 1 ] && grep -q "no node features" first.err ||
  fail "train on a structure-only graph: exit $rc, stdout '$(cat first.out)', stderr '$(cat first.err)'"
if ! nvidia-smi -L > /dev/null 2>&1; then
  "$bin" compare demo --device cuda --parts 2 --layers 2 > first2.out 2> first2.err; rc=$?
  [ $rc -ne 0 ] && [ ! -s first2.out ] || fail "compare --device cuda without a GPU: exit $rc, stdout '$(cat first2.out)'"
fi
ok "an error is the only line: no run line before it, no table header after it"

# Issue 37: a model too large for the host is refused before training, from the memory model, with its bytes (exit 5,
# within seconds), also under ulimit -v (not for a sanitized binary: AddressSanitizer needs its address space).
start=$(date +%s)
"$bin" train demo --hidden 1000000 --epochs 2 > big.out 2> big.err; rc=$?
[ $rc -eq 5 ] && grep -q "refused before allocating" big.err && grep -q "bytes" big.err &&
  [ $(( $(date +%s) - start )) -le 5 ] || fail "train --hidden 1000000: exit $rc, $(cat big.err)"
if ! grep -qa "__asan_init" "$bin"; then  # a sanitized binary, whether libasan is linked statically or not
  (ulimit -v 3000000; "$bin" train demo --hidden 1000000 --epochs 2 > big2.out 2> big2.err); rc=$?
  [ $rc -eq 5 ] && grep -q "refused before allocating" big2.err || fail "under ulimit -v: exit $rc, $(cat big2.err)"
fi
ok "a model too large for the host is refused before training with its bytes (exit 5), under ulimit -v too"

echo "$passed passed, 0 failed"
