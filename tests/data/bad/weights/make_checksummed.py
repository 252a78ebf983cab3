#!/usr/bin/env python3
"""Writes the corpus's version-2 weights files (engine/checkpoint.hpp: "GCNPWTS2", i64 n, i64 widths[n], CRC32;
per tensor W0, b0, W1, b1: i64 count, f32[count], CRC32 of the count and floats). Deterministic; run from anywhere:
    python3 tests/data/bad/weights/make_checksummed.py
flipped_byte.weights  3-4-2, one bit of W0's float 2 flipped after its CRC was taken: checksum mismatch
nan.weights           3-4-2, W0[3] = NaN with a correct CRC: refused as non-finite
demo_nan.weights      64-16-7 (the built-in demo's GCN, so the CLI row reaches the tensors), b0[5] = NaN, correct CRC
"""
import math
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))


def weights_file(widths, edit=None, flip=None):
    """edit(tensor_index, values) changes values before the CRC; flip = (byte offset, mask) after it."""
    head = b"GCNPWTS2" + struct.pack("<q", len(widths)) + struct.pack("<%dq" % len(widths), *widths)
    out = bytearray(head + struct.pack("<I", zlib.crc32(head)))
    shapes = []
    for i in range(len(widths) - 1):
        shapes += [widths[i] * widths[i + 1], widths[i + 1]]
    for t, count in enumerate(shapes):
        values = [((k * 7 + t * 3) % 11 - 5) * 0.0625 for k in range(count)]
        if edit:
            edit(t, values)
        part = struct.pack("<q", count) + struct.pack("<%df" % count, *values)
        out += part + struct.pack("<I", zlib.crc32(part))
    if flip:
        out[flip[0]] ^= flip[1]
    return bytes(out)


def set_nan(tensor, index):
    def edit(t, values):
        if t == tensor:
            values[index] = math.nan
    return edit


FILES = {
    # 3-4-2: header 0..43, W0's count at 44, its floats at 52..99; float 2 is bytes 60..63.
    "flipped_byte.weights": weights_file([3, 4, 2], flip=(61, 0x10)),
    "nan.weights": weights_file([3, 4, 2], edit=set_nan(0, 3)),
    "demo_nan.weights": weights_file([64, 16, 7], edit=set_nan(1, 5)),
}

if __name__ == "__main__":
    for name, data in FILES.items():
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
