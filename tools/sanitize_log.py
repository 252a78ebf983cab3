#!/usr/bin/env python3
"""Judges one compute-sanitizer run from its log (the tool's lines and the program's output, interleaved) and prints
one verdict line, then the distinct findings. tools/sanitize calls it once per (binary, tool). Standard library only.

Usage: tools/sanitize_log.py LOG --tool memcheck|racecheck|synccheck|initcheck --rc N [--name NAME]
                             [--seconds S] [--error-exitcode 86] [--timeout S] [--doctest] [--jsonl FILE]
Exit status: 0 clean, 1 not clean, 2 usage.

A run is clean when the tool printed its summary, the program succeeded (doctest's own summary when --doctest) and
no finding is ours. Every finding is ours except a CUDA API error raised inside a CUDA library (NCCL, cuBLAS,
cuSPARSE ...) by the library's own probing, e.g. NCCL's cuGetProcAddress look-ups: the first host frame below the
driver and runtime names the library. Such errors are listed as ignored; an API error raised from our code is not.
The tool's own count decides (minus the ignored API errors): errors it counted but this script could not
attribute count as ours, and a message it printed but did not count fails nothing.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
TIMEOUT_RCS = (124, 137)  # timeout(1): TERM sent, or KILL after the grace period

ERROR_SUMMARY = re.compile(r"ERROR SUMMARY:\s*([\d,]+) errors?")
RACE_SUMMARY = re.compile(
    r"RACECHECK SUMMARY:\s*([\d,]+) hazards? displayed \(([\d,]+) errors?,\s*([\d,]+) warnings?\)")
LEAK_SUMMARY = re.compile(r"LEAK SUMMARY:\s*([\d,]+) bytes leaked in ([\d,]+) allocations?")
DOCTEST_CASES = re.compile(r"\[doctest\] test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed")
DOCTEST_STATUS = re.compile(r"\[doctest\] Status:\s*(SUCCESS|FAILURE)")
DOCTEST_DURATION = re.compile(r"^\d+\.\d+ s: (.+?)\s*$", re.MULTILINE)  # --duration=true, after each case
DOCTEST_RULE = re.compile(r"^={40,}\s*$", re.MULTILINE)

HEADER = re.compile(r"^========= (\S.*?)\s*$")        # a finding or a tool message starts in column 10
DETAIL = re.compile(r"^=========\s{2,}(\S.*?)\s*$")     # its indented detail lines
NOT_FINDINGS = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "LEAK SUMMARY", "RACECHECK SUMMARY",
                "Target application returned an error", "Error: process didn't terminate successfully",
                "This tool is deprecated")
TOOL_FAILURES = re.compile(r"Internal Sanitizer Error|not supported|No attachable process|Failed to|"
                           r"Unable to|Error: Target application terminated", re.IGNORECASE)
DRIVER_MODULES = re.compile(r"libcuda\.so|libcudart|libcudadebugger|/compute-sanitizer/|libsanitizer|"
                            r"libTreeLauncher|libInterceptor|libnvrtc-builtins")
LIBRARY_MODULES = re.compile(r"lib(nccl|cublasLt|cublas|cusparse|cusolver|curand|cufft|nvJitLink|nvrtc|cudnn)\b")


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def short_function(name: str) -> str:
    """'void ns::kernel<float>(Args<float>, int *)' -> 'ns::kernel<float>': the parameter list goes, templates stay."""
    name = name.strip()
    if name.startswith("void "):
        name = name[5:]
    depth = 0
    for i, c in enumerate(name):
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
        elif c == "(" and depth == 0 and i > 0 and not name.startswith("(anonymous", i):
            return name[:i][:160]
    return name[:160]


class Finding:
    """One report of the tool: its first line, where it happened, and the modules of its host backtrace."""

    def __init__(self, header: str):
        self.header = header
        self.location = ""
        self.modules: list[str] = []

    @property
    def kind(self) -> str:
        if self.header.startswith("Program hit"):
            return "api"
        if "Race reported" in self.header or "hazard" in self.header.lower():
            return "race-warning" if self.header.lower().startswith(("warning", "warn")) else "race"
        if self.header.startswith("Leaked"):
            return "leak"
        return "device"

    @property
    def caller(self) -> str:
        """The first module of the host backtrace below the CUDA driver and runtime ('' without a backtrace)."""
        return next((m for m in self.modules if not DRIVER_MODULES.search(m)), "")

    @property
    def library(self) -> str:
        """The CUDA library whose own code made this API call, or '' when it came from ours (or is unknown)."""
        if self.kind != "api" or not LIBRARY_MODULES.search(self.caller):
            return ""
        return self.caller.rsplit("/", 1)[-1]

    def key(self) -> str:
        text = re.sub(r"0x[0-9a-fA-F]+", "0x..", self.header)
        where = f" at {self.location}" if self.location else ""
        if self.library:
            where += f" [{self.library}]"
        elif self.kind == "leak" and self.caller:
            where += f" [allocated in {self.caller.rsplit('/', 1)[-1]}]"
        return f"{text}{where}"


def parse_findings(lines: list[str]) -> tuple[list[Finding], list[str]]:
    """The tool's findings, and the messages that say the tool itself failed."""
    findings: list[Finding] = []
    tool_failures: list[str] = []
    current: Finding | None = None
    for line in lines:
        if not line.startswith("========="):
            continue
        header = HEADER.match(line)
        if header:
            text = header.group(1)
            current = None
            if text.startswith(NOT_FINDINGS):
                continue
            if TOOL_FAILURES.search(text) and not text.startswith("Program hit"):
                tool_failures.append(text)
                continue
            current = Finding(text)
            findings.append(current)
            continue
        detail = DETAIL.match(line)
        if not detail or current is None:
            continue
        text = detail.group(1)
        if text.startswith("at ") and not current.location:
            where = re.match(r"at (.*?)(?:\+0x[0-9a-fA-F]+)?(?: in (\S+))?$", text)
            function, source = (where.group(1), where.group(2)) if where else (text[3:], None)
            current.location = short_function(function) + (f" ({source.rsplit('/', 1)[-1]})" if source else "")
        elif text.startswith("in ") and "/" in text:
            current.modules.append(text[3:].strip())
        elif text.startswith("Host Frame:"):
            # "in /usr/lib/.../libnccl.so.2" or, from compute-sanitizer 2025.3, a bare "in libnccl.so.2"
            so = re.search(r"in (\S+\.so(?:\.[\d.]+)?)\s*$", text) or re.search(r"(/\S+\.so(?:\.[\d.]+)?)", text)
            if so:
                current.modules.append(so.group(1))
    return findings, tool_failures


def failed_cases(text: str) -> list[str]:
    """'test case: first error line' for each doctest case that reported an error (doctest prints one block each)."""
    out = []
    for block in DOCTEST_RULE.split(text):
        case = re.search(r"^TEST CASE:\s*(.+?)\s*$", block, re.MULTILINE)
        error = re.search(r"^(\S*?)(?::\d+)?:? ?((?:FATAL )?ERROR: .+?)\s*$", block, re.MULTILINE)
        if case and error:
            where = re.search(r"([^/\s]+:\d+): (?:FATAL )?ERROR", block)
            out.append(f"{case.group(1)}: {error.group(2)}" + (f" ({where.group(1)})" if where else ""))
    return out


def judge(text: str, tool: str, rc: int, error_exitcode: int = 86, doctest: bool = False) -> dict:
    """The verdict of one run as a dict: status (PASS/FAIL), reasons, the tool's summary and the findings."""
    lines = text.splitlines()
    findings, tool_failures = parse_findings(lines)
    errors = [_int(m.group(1)) for m in map(ERROR_SUMMARY.search, lines) if m]
    races = [tuple(_int(g) for g in m.groups()) for m in map(RACE_SUMMARY.search, lines) if m]
    leaks = [tuple(_int(g) for g in m.groups()) for m in map(LEAK_SUMMARY.search, lines) if m]
    summary = ""
    for line in lines:
        if "ERROR SUMMARY:" in line or "RACECHECK SUMMARY:" in line:
            summary = line.replace("=========", "").strip()  # the last one printed

    library_api = [f for f in findings if f.kind == "api" and f.library]
    ours_parsed = [f for f in findings if not (f.kind == "api" and f.library) and f.kind != "race-warning"]
    race_errors = sum(r[1] for r in races)
    race_warnings = sum(r[2] for r in races)
    counted = sum(errors)
    if tool == "racecheck":  # its hazards are counted in RACECHECK SUMMARY; API errors are not
        ours = race_errors + sum(1 for f in ours_parsed if f.kind == "api")
    else:  # the tool's own count decides; the parsed reports only name what was found
        ours = max(counted - len(library_api), 0)
    if any(bytes_ > 0 for bytes_, _ in leaks):
        ours = max(ours, 1)

    reasons: list[str] = []
    if rc in TIMEOUT_RCS:
        reasons.append("timed out")
    summarised = bool(errors or races)
    internal = [m for m in tool_failures if "Internal Sanitizer Error" in m]
    if internal or (tool_failures and not summarised):
        reasons.append("sanitizer failed: " + (internal or tool_failures)[0][:120])
    elif not summarised:
        reasons.append("no sanitizer summary (the tool did not finish)")
    if ours > 0:
        reasons.append(f"{ours} finding(s)")

    cases = DOCTEST_CASES.findall(text)
    status_lines = DOCTEST_STATUS.findall(text)
    doctest_info = None
    if cases:
        total, passed, failed = (int(x) for x in cases[-1])
        doctest_info = {"cases": total, "passed": passed, "failed": failed}
        if failed > 0 or (status_lines and status_lines[-1] == "FAILURE"):
            reasons.append(f"{failed} test case(s) failed")
        elif total == 0:
            reasons.append("no test case ran")
    elif doctest and rc not in TIMEOUT_RCS:
        reasons.append("no doctest summary (the program did not finish)")
    app_failed = "Target application returned an error" in text
    if rc not in (0, error_exitcode) + TIMEOUT_RCS or app_failed:
        if not any("test case" in r for r in reasons):
            reasons.append(f"program failed (exit {rc})" if rc not in (0, error_exitcode) else "program failed")

    failures = failed_cases(text) if reasons else []
    if reasons and not failures:
        errors_printed = [l.strip() for l in lines if l.startswith("gcnpart: error:")]
        failures = errors_printed[-1:]
    finished = DOCTEST_DURATION.findall(text)
    distinct = Counter(f.key() for f in findings if f in ours_parsed or f.kind == "race-warning")
    ignored = Counter(f.key() for f in library_api)
    return {
        "status": "FAIL" if reasons else "PASS",
        "tool": tool,
        "rc": rc,
        "reasons": reasons,
        "summary": summary,
        "errors_counted": counted if errors else None,
        "race": {"errors": race_errors, "warnings": race_warnings} if races else None,
        "leaked_bytes": sum(b for b, _ in leaks) if leaks else None,
        "ours": ours,
        "library_api_ignored": len(library_api),
        "doctest": doctest_info,
        "tool_messages": tool_failures,
        "failed": failures,
        "last_finished": finished[-1] if finished and rc in TIMEOUT_RCS else None,
        "findings": [{"count": n, "text": k} for k, n in distinct.most_common()],
        "ignored": [{"count": n, "text": k} for k, n in ignored.most_common()],
    }


def verdict_lines(v: dict, name: str, seconds: float | None, limit: int = 8) -> list[str]:
    cases = f"{v['doctest']['cases']} cases" if v["doctest"] else ""
    secs = f"{seconds:.1f} s" if seconds is not None else ""
    summary = v["summary"] or "-"
    head = f"{v['status']:<4}  {v['tool']:<9}  {name:<24} {secs:>8}  {cases:>9}  {summary}"
    notes = []
    if v["race"] and v["race"]["warnings"]:
        notes.append(f"{v['race']['warnings']} race warning(s)")
    if v["library_api_ignored"]:
        notes.append(f"{v['library_api_ignored']} API error(s) inside CUDA libraries ignored")
    if v["tool_messages"] and not any(r.startswith("sanitizer failed") for r in v["reasons"]):
        notes.append("tool said: " + v["tool_messages"][0][:100])
    if v["reasons"]:
        notes = v["reasons"] + notes
    if notes:
        head += "  (" + "; ".join(notes) + ")"
    out = [head]
    for f in v["findings"][:limit]:
        out.append(f"      {f['count']:>4}x {f['text'][:220]}")
    if len(v["findings"]) > limit:
        out.append(f"      ... {len(v['findings']) - limit} more distinct finding(s) in the log")
    for f in v["failed"][:limit]:
        out.append(f"      failed: {f[:220]}")
    if v["last_finished"]:
        out.append(f"      last test case finished: {v['last_finished'][:200]}")
    for f in v["ignored"][:3]:
        out.append(f"      {f['count']:>4}x (ignored) {f['text'][:200]}")
    return out


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("log")
    p.add_argument("--tool", required=True, choices=TOOLS)
    p.add_argument("--rc", type=int, required=True, help="exit status of compute-sanitizer (under timeout)")
    p.add_argument("--name", default="")
    p.add_argument("--seconds", type=float)
    p.add_argument("--error-exitcode", type=int, default=86)
    p.add_argument("--timeout", type=float, help="the run's time limit, printed with a timeout")
    p.add_argument("--doctest", action="store_true", help="the program is a doctest binary: require its summary")
    p.add_argument("--jsonl", help="append the verdict as one JSON line to this file")
    a = p.parse_args(argv)
    try:
        with open(a.log, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError as e:
        print(f"sanitize_log: {e}", file=sys.stderr)
        return 2
    v = judge(text, a.tool, a.rc, a.error_exitcode, a.doctest)
    if a.timeout is not None and "timed out" in v["reasons"]:
        v["reasons"][v["reasons"].index("timed out")] = f"timed out after {a.timeout:g} s"
    print("\n".join(verdict_lines(v, a.name or a.log, a.seconds)))
    if a.jsonl:
        with open(a.jsonl, "a", encoding="utf-8") as f:
            f.write(json.dumps({"name": a.name, "seconds": a.seconds, "log": a.log, **v}) + "\n")
    return 0 if v["status"] == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
