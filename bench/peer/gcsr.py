"""A numpy reader for gcnpart's .gcsr files (layout: datasets/README.md, "The .gcsr format").

    from gcsr import read_gcsr
    d = read_gcsr("graph.gcsr")
    d["row_offsets"], d["col_ids"], d["values"], d["features"], d["labels"], d["splits"]["train"]

Run as a script to print a summary: python3 bench/peer/gcsr.py graph.gcsr
"""

import struct
import sys
import zlib

import numpy as np

MAGIC = b"GCNPCSR\0"
VERSION = 1
HEADER = struct.Struct("<8sIIQQQQIIQ")  # 64 bytes
ENTRY = struct.Struct("<32sIIQQQ")  # 64 bytes
DTYPES = {1: np.dtype("<i4"), 2: np.dtype("<i8"), 3: np.dtype("<f4"), 4: np.dtype("u1")}
FLAG_WEIGHTED, FLAG_FEATURES, FLAG_LABELS = 1, 2, 4


def read_gcsr(path, verify=True):
    """Returns a dict: row_offsets (int64[N+1]), col_ids (int32[E]), values (float32[E] or None),
    features (float32[N, F] or None), labels (int32[N] or None), splits ({name: int32[]}), num_classes,
    num_nodes, num_edges, name, provenance, build_stats (int64[5] or None). Raises ValueError on a bad file."""
    with open(path, "rb") as f:
        data = f.read()

    def fail(offset, problem):
        raise ValueError(f"{path}: {problem} at byte {offset}")

    if len(data) < HEADER.size:
        fail(len(data), "file too short for the header")
    magic, version, flags, n, e, nf, classes, nsplits, nsections, size = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        fail(0, f"bad magic {magic!r}")
    if version != VERSION:
        fail(8, f"unsupported version {version}")
    table_end = HEADER.size + ENTRY.size * nsections
    if len(data) < table_end + 8:
        fail(len(data), "file truncated inside the section table")
    (header_crc,) = struct.unpack_from("<I", data, table_end)
    if verify and zlib.crc32(data[:table_end]) != header_crc:
        fail(table_end, "header checksum mismatch")
    if len(data) != size:
        fail(min(len(data), size), f"file has {len(data)} bytes, header says {size}")

    sections = {}
    for i in range(nsections):
        raw_name, dtype, crc, count, offset, length = ENTRY.unpack_from(data, HEADER.size + ENTRY.size * i)
        name = raw_name.split(b"\0", 1)[0].decode("utf-8")
        dt = DTYPES[dtype]
        if offset % 64 or offset + length > size or count * dt.itemsize != length:
            fail(HEADER.size + ENTRY.size * i, f"bad table entry for section {name!r}")
        chunk = data[offset : offset + length]
        if verify and zlib.crc32(chunk) != crc:
            fail(offset, f"checksum mismatch in section {name!r}")
        sections[name] = np.frombuffer(chunk, dtype=dt, count=count)

    def text(name):
        return bytes(sections[name]).decode("utf-8") if name in sections else ""

    return {
        "num_nodes": n,
        "num_edges": e,
        "num_classes": classes,
        "row_offsets": sections["row_offsets"],
        "col_ids": sections["col_ids"],
        "values": sections.get("values") if flags & FLAG_WEIGHTED else None,
        "features": sections["features"].reshape(n, nf) if flags & FLAG_FEATURES else None,
        "labels": sections.get("labels") if flags & FLAG_LABELS else None,
        "splits": {k[len("split:"):]: v for k, v in sections.items() if k.startswith("split:")},
        "name": text("name"),
        "provenance": text("provenance"),
        "build_stats": sections.get("build_stats"),
    }


if __name__ == "__main__":
    for p in sys.argv[1:]:
        d = read_gcsr(p)
        print(f"{p}: {d['name']!r}: {d['num_nodes']} nodes, {d['num_edges']} edges, "
              f"features {None if d['features'] is None else d['features'].shape}, {d['num_classes']} classes, "
              f"splits {{{', '.join(f'{k}: {len(v)}' for k, v in d['splits'].items())}}}")
