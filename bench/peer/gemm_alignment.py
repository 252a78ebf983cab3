#!/usr/bin/env python3
"""How much an unaligned width costs a bf16 GEMM, and whether padding it pays (issue 15's next lever).

gcnpart's calibration (partition/fit/calibration.json) timed cuBLAS bf16 GEMMs at 47 columns 2.5x slower than at 64
(row-major leading dimensions of 47 or 100 bf16 elements are not 16-byte multiples). This script times, with torch on
the GPU (cuBLASLt), each GCN-shaped bf16 GEMM of the products-sized graph (2^21 rows) three ways: as is (unaligned
leading dimension), on operands already padded to a multiple of 8 (the layout fix), and padded on the fly (copy in,
GEMM, copy the result out: the wrapper fix), and prints the ratios. No gcnpart build needed.

  python3 bench/peer/gemm_alignment.py [--rows 2097152] [--json out.json]
"""
import argparse
import json
import sys

import torch


def timed(fn, warmup=3, repeats=20):
    for _ in range(warmup):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(repeats):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def unaligned(rows, cols, pad_to):
    """A rows x cols bf16 matrix whose rows start every `cols` elements (cols itself unaligned), and the same data in
    a buffer with rows every `pad_to` elements."""
    a = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    padded = torch.zeros(rows, pad_to, device="cuda", dtype=torch.bfloat16)
    padded[:, :cols] = a
    return a, padded


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1 << 21)
    ap.add_argument("--json")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA device")
    r = args.rows
    out = []
    # (name, m, k, n, which operand is unaligned): the products-sized epoch's bf16 GEMMs.
    cases = [("forward layer 2: H(r x 256) W(256 x 47)", "C", 256, 47),
             ("input gradient: G(r x 47) W^T(47 x 256)", "A", 47, 256),
             ("forward layer 1: (A X)(r x 100) W(100 x 256)", "A", 100, 256)]
    for name, which, k, n in cases:
        pad_k = (k + 7) // 8 * 8
        pad_n = (n + 7) // 8 * 8
        if which == "A":
            a, a_pad = unaligned(r, k, pad_k)
            w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
            w_pad = torch.zeros(pad_k, n, device="cuda", dtype=torch.bfloat16)
            w_pad[:k] = w
            as_is = timed(lambda: a @ w)
            pre_padded = timed(lambda: a_pad @ w_pad)

            def on_the_fly():
                tmp = torch.zeros(r, pad_k, device="cuda", dtype=torch.bfloat16)
                tmp[:, :k] = a
                return tmp @ w_pad
            fly = timed(on_the_fly)
        else:  # the output C (r x n) is the unaligned one
            h = torch.randn(r, k, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
            w_pad = torch.zeros(k, pad_n, device="cuda", dtype=torch.bfloat16)
            w_pad[:, :n] = w
            as_is = timed(lambda: h @ w)
            pre_padded = timed(lambda: h @ w_pad)
            fly = timed(lambda: (h @ w_pad)[:, :n].contiguous())
        row = {"case": name, "rows": r, "as_is_ms": as_is, "padded_layout_ms": pre_padded, "pad_on_the_fly_ms": fly,
               "layout_speedup": as_is / pre_padded, "on_the_fly_speedup": as_is / fly}
        out.append(row)
        print("%-48s as is %7.3f ms | padded layout %7.3f ms (%.2fx) | padded on the fly %7.3f ms (%.2fx)" % (
            name, as_is, pre_padded, as_is / pre_padded, fly, as_is / fly))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": out}, f, indent=1)


if __name__ == "__main__":
    main()
