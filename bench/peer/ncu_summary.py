#!/usr/bin/env python3
"""Per-kernel table of an Nsight Compute CSV export: calls, total time, DRAM bytes, achieved GB/s, % of peak DRAM
throughput, % of peak SM throughput and L2 hit rate, sorted by total time; markdown on stdout, JSON with --json.
Standard library only. bench/run/ncu.sh calls it on `ncu --import R.ncu-rep --csv --page raw`.

Usage: bench/peer/ncu_summary.py CSV [CSV ...] [--json OUT] [--markdown OUT] [--title TEXT] [--top N]

Reads both CSV layouts of ncu: `--page raw` (one row per kernel launch, a column per metric, usually a units row
under the header) and the default details page (one row per metric: "Metric Name", "Metric Unit", "Metric Value").
Tolerates ncu's "==PROF==" lines and program output before or between rows, quoted fields, thousands separators,
"n/a", and scaled units (Kbyte/Mbyte/Gbyte, usecond/msecond) as well as base units (--print-units base).

Achieved GB/s = (DRAM bytes read + written) / gpu__time_duration, which is bytes per nanosecond. % of peak DRAM and
SM throughput and the L2 hit rate are averaged over a kernel's launches weighted by each launch's duration. Each
launch was replayed by ncu with its caches flushed (--cache-control all, the default) and at the clocks the GPU ran at
(--clock-control none in bench/run/ncu.sh), so the times are those of a cold-cache launch, not of a running epoch.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from collections import OrderedDict

# What the table needs, each with the names ncu may report it under (first found wins).
METRICS = OrderedDict([
    ("time_ns", ("gpu__time_duration.sum", "gpu__time_duration.avg", "gpu__time_duration")),
    ("read_bytes", ("dram__bytes_read.sum",)),
    ("write_bytes", ("dram__bytes_write.sum",)),
    ("total_bytes", ("dram__bytes.sum",)),  # used when read and write are not both there
    ("dram_pct", ("dram__throughput.avg.pct_of_peak_sustained_elapsed",
                  "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed")),
    ("sm_pct", ("sm__throughput.avg.pct_of_peak_sustained_elapsed",)),
    ("l2_hit_pct", ("lts__t_sector_hit_rate.pct",)),
])

# Unit -> factor to the base unit (ns for time, bytes for sizes; ncu's byte prefixes are decimal).
UNIT_FACTORS = {
    "": 1.0, "%": 1.0, "pct": 1.0,
    "ns": 1.0, "nsecond": 1.0, "nsec": 1.0,
    "us": 1e3, "usecond": 1e3, "usec": 1e3, "µs": 1e3,
    "ms": 1e6, "msecond": 1e6, "msec": 1e6,
    "s": 1e9, "second": 1e9, "sec": 1e9,
    "b": 1.0, "byte": 1.0, "bytes": 1.0,
    "kb": 1e3, "kbyte": 1e3, "mb": 1e6, "mbyte": 1e6, "gb": 1e9, "gbyte": 1e9, "tb": 1e12, "tbyte": 1e12,
    "kib": 1024.0, "mib": 1024.0 ** 2, "gib": 1024.0 ** 3, "tib": 1024.0 ** 4,
}


class NcuCsvError(ValueError):
    pass


def parse_number(text: str) -> float | None:
    """'1,234,567.5' -> 1234567.5; '', 'n/a', 'N/A', '-' -> None."""
    t = text.strip().strip('"').replace("\u202f", "").replace("\xa0", "")
    if t.lower() in ("", "n/a", "na", "-", "nan"):
        return None
    t = t.replace(",", "")
    try:
        v = float(t)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def to_base(value: float | None, unit: str, metric: str, warnings: list[str]) -> float | None:
    if value is None:
        return None
    u = unit.strip()
    factor = UNIT_FACTORS.get(u, UNIT_FACTORS.get(u.lower()))
    if factor is None:
        msg = f"unknown unit '{unit}' of {metric}: taken as the base unit"
        if msg not in warnings:
            warnings.append(msg)
        factor = 1.0
    return value * factor


def _rows(text: str) -> tuple[list[str], list[list[str]]]:
    """The header and the data rows of the CSV table in `text`, ignoring everything that is not part of it."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        if '"Kernel Name"' in line or line.startswith("ID,") or ",Kernel Name," in line:
            fields = next(csv.reader([line]))
            if "Kernel Name" in fields and "ID" in fields:
                start = i
                break
    if start is None:
        raise NcuCsvError("no ncu CSV header (a row with \"ID\" and \"Kernel Name\") found")
    header = next(csv.reader([lines[start]]))
    body = [l for l in lines[start + 1:] if l.strip() and not l.startswith("==")]
    rows = [r for r in csv.reader(io.StringIO("\n".join(body))) if len(r) == len(header)]
    return header, rows


def read_launches(text: str, warnings: list[str]) -> list[dict]:
    """One dict per profiled launch: name, and each metric of METRICS in base units (absent: None)."""
    header, rows = _rows(text)
    col = {name: i for i, name in enumerate(header)}
    launches: "OrderedDict[tuple, dict]" = OrderedDict()

    def launch_of(row: list[str]) -> dict | None:
        kid = row[col["ID"]].strip()
        if not kid or parse_number(kid) is None:
            return None
        key = (row[col["Process ID"]] if "Process ID" in col else "", kid)
        if key not in launches:
            launches[key] = {"name": row[col["Kernel Name"]].strip(), "raw": {}}
        return launches[key]

    if "Metric Name" in col and "Metric Value" in col:  # details page: one row per metric
        unit_col = col.get("Metric Unit")
        for row in rows:
            launch = launch_of(row)
            if launch is None:
                continue
            metric = row[col["Metric Name"]].strip()
            unit = row[unit_col] if unit_col is not None else ""
            launch["raw"][metric] = to_base(parse_number(row[col["Metric Value"]]), unit, metric, warnings)
    else:  # raw page: one row per launch, maybe a units row first
        units = [""] * len(header)
        if rows and not rows[0][col["ID"]].strip():
            units = rows[0]
            rows = rows[1:]
        wanted = {n for names in METRICS.values() for n in names}
        for row in rows:
            launch = launch_of(row)
            if launch is None:
                continue
            for metric in wanted & col.keys():
                i = col[metric]
                launch["raw"][metric] = to_base(parse_number(row[i]), units[i], metric, warnings)

    out = []
    for launch in launches.values():
        values = {}
        for key, names in METRICS.items():
            values[key] = next((launch["raw"][n] for n in names if launch["raw"].get(n) is not None), None)
        out.append({"name": launch["name"], **values})
    return out


def short_name(name: str, width: int = 64) -> str:
    """'void gcnpart::kernels::detail::spmm_row_kernel<float>(Args)' -> 'spmm_row_kernel<float>'."""
    n = name.strip()
    if n.startswith("void "):
        n = n[5:]
    depth, cut, last_scope = 0, len(n), 0
    for i, c in enumerate(n):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0 and i > 0 and not n.startswith("(anonymous", i):
            cut = i
            break
        elif c == ":" and depth == 0 and n.startswith("::", i):
            last_scope = i + 2
    n = n[last_scope:cut] if last_scope < cut else n[:cut]
    return n if len(n) <= width else n[:width - 1] + "…"


def aggregate(launches: list[dict]) -> tuple[list[dict], dict]:
    kernels: "OrderedDict[str, dict]" = OrderedDict()
    for l in launches:
        k = kernels.setdefault(l["name"], {"name": l["name"], "calls": 0, "time_ns": 0.0, "read_bytes": 0.0,
                                           "write_bytes": 0.0, "_w": {"dram_pct": [0.0, 0.0], "sm_pct": [0.0, 0.0],
                                                                      "l2_hit_pct": [0.0, 0.0]},
                                           "missing_time": 0, "missing_bytes": 0})
        k["calls"] += 1
        t = l["time_ns"]
        if t is None:
            k["missing_time"] += 1
            t = 0.0
        k["time_ns"] += t
        if l["read_bytes"] is not None and l["write_bytes"] is not None:
            k["read_bytes"] += l["read_bytes"]
            k["write_bytes"] += l["write_bytes"]
        elif l["total_bytes"] is not None:
            k["read_bytes"] += l["total_bytes"]  # no split: all counted as read
        else:
            k["missing_bytes"] += 1
        for m in ("dram_pct", "sm_pct", "l2_hit_pct"):
            if l[m] is not None and t > 0:
                k["_w"][m][0] += l[m] * t
                k["_w"][m][1] += t

    total_ns = sum(k["time_ns"] for k in kernels.values())
    rows = []
    for k in kernels.values():
        w = k.pop("_w")
        bytes_ = k["read_bytes"] + k["write_bytes"]
        k.update({
            "short_name": short_name(k["name"]),
            "total_ms": k["time_ns"] / 1e6,
            "share_of_time": k["time_ns"] / total_ns if total_ns > 0 else None,
            "mean_us": k["time_ns"] / k["calls"] / 1e3 if k["calls"] else None,
            "dram_bytes": bytes_,
            "dram_bytes_per_call": bytes_ / k["calls"] if k["calls"] else None,
            "achieved_gbs": bytes_ / k["time_ns"] if k["time_ns"] > 0 else None,  # bytes per ns = GB/s
            **{m: (s / t if t > 0 else None) for m, (s, t) in w.items()},
        })
        rows.append(k)
    rows.sort(key=lambda r: r["time_ns"], reverse=True)
    seen: dict[str, int] = {}
    for r in rows:  # distinct instantiations that shorten to the same text stay apart
        seen[r["short_name"]] = seen.get(r["short_name"], 0) + 1
        if seen[r["short_name"]] > 1:
            r["short_name"] += f" #{seen[r['short_name']]}"

    def weighted(m):
        pairs = [(r[m], r["time_ns"]) for r in rows if r[m] is not None]
        den = sum(t for _, t in pairs)
        return sum(v * t for v, t in pairs) / den if den > 0 else None

    total_bytes = sum(r["dram_bytes"] for r in rows)
    total = {"kernels": len(rows), "calls": sum(r["calls"] for r in rows), "time_ns": total_ns,
             "total_ms": total_ns / 1e6, "read_bytes": sum(r["read_bytes"] for r in rows),
             "write_bytes": sum(r["write_bytes"] for r in rows), "dram_bytes": total_bytes,
             "achieved_gbs": total_bytes / total_ns if total_ns > 0 else None,
             "dram_pct": weighted("dram_pct"), "sm_pct": weighted("sm_pct"), "l2_hit_pct": weighted("l2_hit_pct")}
    return rows, total


def _f(v, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def markdown(rows: list[dict], total: dict, title: str = "", top: int | None = None) -> str:
    out = []
    if title:
        out += [f"### {title}", ""]
    out += ["| kernel | calls | total ms | % time | µs/call | DRAM MB/call | GB/s | % peak DRAM | % peak SM "
            "| L2 hit % |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    shown = rows if top is None else rows[:top]
    for r in shown:
        name = r["short_name"].replace("|", "\\|")
        share = None if r["share_of_time"] is None else 100 * r["share_of_time"]
        mb = None if r["dram_bytes_per_call"] is None else r["dram_bytes_per_call"] / 1e6
        out.append(f"| `{name}` | {r['calls']} | {_f(r['total_ms'], '.3f')} | {_f(share, '.1f')} | "
                   f"{_f(r['mean_us'], '.1f')} | {_f(mb, '.2f')} | {_f(r['achieved_gbs'], '.0f')} | "
                   f"{_f(r['dram_pct'], '.1f')} | {_f(r['sm_pct'], '.1f')} | {_f(r['l2_hit_pct'], '.1f')} |")
    if top is not None and len(rows) > top:
        rest = rows[top:]
        ms = sum(r["total_ms"] for r in rest)
        out.append(f"| {len(rest)} more kernels | {sum(r['calls'] for r in rest)} | {ms:.3f} | "
                   f"{_f(100 * ms * 1e6 / total['time_ns'] if total['time_ns'] else None, '.1f')} | | | | | | |")
    out.append(f"| **all {total['kernels']} kernels** | {total['calls']} | {_f(total['total_ms'], '.3f')} | 100.0 | | "
               f"{_f(total['dram_bytes'] / 1e6, '.1f')} total | {_f(total['achieved_gbs'], '.0f')} | "
               f"{_f(total['dram_pct'], '.1f')} | {_f(total['sm_pct'], '.1f')} | {_f(total['l2_hit_pct'], '.1f')} |")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csv", nargs="+", help="ncu CSV export(s); several are summed into one table")
    p.add_argument("--json", help="write the table (full kernel names) and the totals as JSON")
    p.add_argument("--markdown", help="also write the markdown table to this file")
    p.add_argument("--title", default="")
    p.add_argument("--top", type=int, help="rows to show (the rest summed in one row)")
    a = p.parse_args(argv)
    launches, warnings = [], []
    for path in a.csv:
        try:
            with open(path, encoding="utf-8-sig", errors="replace") as f:
                launches += read_launches(f.read(), warnings)
        except (OSError, NcuCsvError) as e:
            print(f"ncu_summary: {path}: {e}", file=sys.stderr)
            return 1
    if not launches:
        print(f"ncu_summary: {', '.join(a.csv)}: no profiled kernel launch in the CSV", file=sys.stderr)
        return 1
    for w in warnings:
        print(f"ncu_summary: warning: {w}", file=sys.stderr)
    rows, total = aggregate(launches)
    md = markdown(rows, total, a.title, a.top)
    sys.stdout.write(md)
    if a.markdown:
        with open(a.markdown, "w", encoding="utf-8") as f:
            f.write(md)
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"title": a.title, "sources": a.csv,
                       "metrics": {k: list(v) for k, v in METRICS.items()},
                       "method": "achieved_gbs = (dram bytes read + written) / gpu__time_duration; percentages "
                                 "weighted by launch duration; each launch replayed cold-cache by ncu",
                       "warnings": warnings, "total": total, "kernels": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
