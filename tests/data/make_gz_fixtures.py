#!/usr/bin/env python3
"""Writes the gzip fixtures under tests/data (deterministic: mtime 0, no stored name, level 9).

Run from anywhere: python3 tests/data/make_gz_fixtures.py. The outputs are committed; rerunning reproduces them
byte for byte.
"""
import gzip
import io
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def gz_bytes(text: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as f:
        f.write(text.encode("ascii"))
    return buf.getvalue()


def write(rel: str, data: bytes) -> None:
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


# SNAP: 64-bit, non-contiguous ids (mapped ascending: 7->0, 10->1, 42->2, 10^12->3).
write("snap/sparse_ids.txt.gz", gz_bytes("# Nodes: 4 Edges: 4\n10\t1000000000000\n7 10\n42\t7\n1000000000000 42\n"))

# A gzip stream cut short (the data before the cut decompresses; the end of the member is missing), and one
# with a flipped byte inside the deflate data.
lines = "".join(f"{i}\t{(i * 7919) % 1000}\n" for i in range(1000))
whole = gz_bytes("# Nodes: 1000 Edges: 1000\n" + lines)
write("snap/truncated.txt.gz", whole[: len(whole) // 2])
corrupt = bytearray(whole)
corrupt[len(corrupt) // 3] ^= 0xFF
write("snap/corrupt.txt.gz", bytes(corrupt))

# Matrix Market, gzip, symmetric real: the lower triangle only; the diagonal entry is a self loop.
write("mtx/real_symmetric.mtx.gz", gz_bytes(
    "%%MatrixMarket matrix coordinate real symmetric\n% lower triangle\n3 3 3\n2 1 0.5\n3 2 1.5e0\n3 3 2.0\n"))

# OGB tiny: 6 nodes, 4 undirected edges stored once (node 5 isolated and unlabelled), 3 features, 3 classes.
tiny = "ogb/tiny"
write(f"{tiny}/RELEASE_v1.txt", b"tiny hand-written OGB-layout dataset for the loader tests\n")
meta = [",tiny", "num tasks,1", "num classes,3", "eval metric,acc", "task type,multiclass classification",
        "download_name,tiny", "version,1", "url,None", "add_inverse_edge,True", "has_node_attr,True",
        "has_edge_attr,False", "split,random", "additional node files,None", "additional edge files,None",
        "is hetero,False", "binary,False", "num nodes,6", "num edges,4", "num node features,3"]
write(f"{tiny}/meta.csv", ("\n".join(meta) + "\n").encode())
write(f"{tiny}/raw/edge.csv.gz", gz_bytes("0,1\n1,2\n2,3\n3,4\n"))
write(f"{tiny}/raw/num-node-list.csv.gz", gz_bytes("6\n"))
write(f"{tiny}/raw/num-edge-list.csv.gz", gz_bytes("4\n"))
write(f"{tiny}/raw/node-feat.csv.gz", gz_bytes(
    "0.0,1.5,-2.0\n1.0,0.0,0.25\n0.0,0.0,0.0\n3.0,1e-3,2\n-1.0,0.5,0.125\n0.0,0.0,1.0\n"))
write(f"{tiny}/raw/node-label.csv.gz", gz_bytes("0\n1\n2\n1\n0\n\"\"\n"))
write(f"{tiny}/split/random/train.csv.gz", gz_bytes("0\n1\n"))
write(f"{tiny}/split/random/valid.csv.gz", gz_bytes("2\n3\n"))
write(f"{tiny}/split/random/test.csv.gz", gz_bytes("4\n"))
# A second split folder, so the choice has to come from meta.csv or the caller.
write(f"{tiny}/split/other/train.csv.gz", gz_bytes("3\n4\n"))
write(f"{tiny}/split/other/valid.csv.gz", gz_bytes("0\n"))
write(f"{tiny}/split/other/test.csv.gz", gz_bytes("1\n2\n"))
