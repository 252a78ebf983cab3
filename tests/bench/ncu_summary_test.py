#!/usr/bin/env python3
"""bench/peer/ncu_summary.py on hand-made Nsight Compute CSV exports, in both of ncu's layouts."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "bench", "peer", "ncu_summary.py")
sys.path.insert(0, os.path.dirname(SCRIPT))
from ncu_summary import NcuCsvError, aggregate, markdown, read_launches, short_name  # noqa: E402

SPMM = "void gcnpart::kernels::detail::spmm_row_kernel<float>(gcnpart::kernels::detail::SpmmArgs<float>, int *)"
ADAM = "void gcnpart::kernels::detail::adam_kernel(float *, const float *, float *, float *, long, AdamParams, float)"
LEAD = '"0","4242","gcnpart","127.0.0.1"'

# --page raw --print-units base: a units row under the header, thousands separators, n/a, program output and
# ncu's own lines around the table.
RAW = f'''==PROF== Connected to process 4242 (/work/main/build/gpu/tools/gcnpart)
==PROF== Profiling "spmm_row_kernel" - 0: 0%....50%....100% - 9 passes
spmm      median ms     min ms
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","device__attribute_display_name","dram__bytes_read.sum","dram__bytes_write.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","gpu__time_duration.sum","lts__t_sector_hit_rate.pct","sm__throughput.avg.pct_of_peak_sustained_elapsed"
"","","","","","","","","","","","","byte","byte","%","nsecond","%","%"
"0","4242","gcnpart","127.0.0.1","{SPMM}","1","13","(256, 1, 1)","(8192, 1, 1)","0","9.0","NVIDIA H200","2,000,000,000","500,000,000","80.5","1,000,000","10","20"
"1","4242","gcnpart","127.0.0.1","{SPMM}","1","13","(256, 1, 1)","(8192, 1, 1)","0","9.0","NVIDIA H200","1,000,000,000","500,000,000","60.5","1,000,000","30","40"
==PROF== Profiling "adam_kernel" - 2: 0%....50%....100% - 9 passes
"2","4242","gcnpart","127.0.0.1","{ADAM}","1","13","(256, 1, 1)","(64, 1, 1)","0","9.0","NVIDIA H200","1,000","1,000","n/a","2,000","50","1"
==PROF== Disconnected from process 4242
'''


def details_row(kid, name, metric, unit, value):
    return (f'"{kid}","4242","gcnpart","127.0.0.1","{name}","1","13","(256, 1, 1)","(8192, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


# The default (details) page with scaled units; launch 1 reports DRAM % under the newer gpu__dram_throughput name.
DETAILS = "\n".join([
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
    '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"',
    details_row(0, SPMM, "dram__bytes_read.sum", "Gbyte", "2.00"),
    details_row(0, SPMM, "dram__bytes_write.sum", "Mbyte", "500.00"),
    details_row(0, SPMM, "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "80.50"),
    details_row(0, SPMM, "gpu__time_duration.sum", "msecond", "1.00"),
    details_row(0, SPMM, "lts__t_sector_hit_rate.pct", "%", "10"),
    details_row(0, SPMM, "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "20"),
    details_row(1, SPMM, "dram__bytes_read.sum", "Mbyte", "1,000.00"),
    details_row(1, SPMM, "dram__bytes_write.sum", "Kbyte", "500,000"),
    details_row(1, SPMM, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%", "60.5"),
    details_row(1, SPMM, "gpu__time_duration.sum", "usecond", "1,000.00"),
    details_row(1, SPMM, "lts__t_sector_hit_rate.pct", "%", "30"),
    details_row(1, SPMM, "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "40"),
    details_row(2, ADAM, "dram__bytes_read.sum", "byte", "1,000"),
    details_row(2, ADAM, "dram__bytes_write.sum", "byte", "1,000"),
    details_row(2, ADAM, "dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "n/a"),
    details_row(2, ADAM, "gpu__time_duration.sum", "usecond", "2.00"),
    details_row(2, ADAM, "lts__t_sector_hit_rate.pct", "%", "50"),
    details_row(2, ADAM, "sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", "1"),
]) + "\n"


class NcuSummaryTest(unittest.TestCase):
    def check_table(self, text):
        warnings = []
        rows, total = aggregate(read_launches(text, warnings))
        self.assertEqual(warnings, [])
        self.assertEqual([r["short_name"] for r in rows], ["spmm_row_kernel<float>", "adam_kernel"])
        spmm, adam = rows
        self.assertEqual(spmm["calls"], 2)
        self.assertAlmostEqual(spmm["total_ms"], 2.0)
        self.assertAlmostEqual(spmm["dram_bytes"], 4.0e9)
        self.assertAlmostEqual(spmm["achieved_gbs"], 2000.0)  # 4 GB in 2 ms
        self.assertAlmostEqual(spmm["dram_pct"], 70.5)  # equal durations: the plain mean
        self.assertAlmostEqual(spmm["l2_hit_pct"], 20.0)
        self.assertAlmostEqual(spmm["sm_pct"], 30.0)
        self.assertAlmostEqual(adam["achieved_gbs"], 1.0)  # 2,000 bytes in 2,000 ns
        self.assertIsNone(adam["dram_pct"])
        self.assertEqual(total["calls"], 3)
        self.assertAlmostEqual(total["total_ms"], 2.002)
        self.assertAlmostEqual(total["achieved_gbs"], (4.0e9 + 2000) / 2.002e6)
        self.assertAlmostEqual(spmm["share_of_time"], 2.0 / 2.002)
        return rows, total

    def test_raw_page_with_a_units_row_and_thousands_separators(self):
        self.check_table(RAW)

    def test_details_page_with_scaled_units_and_the_newer_dram_metric_name(self):
        self.check_table(DETAILS)

    def test_raw_page_without_a_units_row_reads_base_units(self):
        lines = RAW.splitlines()
        units = next(i for i, l in enumerate(lines) if l.startswith('"","'))
        self.check_table("\n".join(lines[:units] + lines[units + 1:]))

    def test_durations_weight_the_percentages(self):
        text = RAW.replace('"60.5","1,000,000"', '"60.5","3,000,000"')
        rows, _ = aggregate(read_launches(text, []))
        self.assertAlmostEqual(rows[0]["dram_pct"], (80.5 * 1 + 60.5 * 3) / 4)

    def test_an_unknown_unit_is_a_warning_not_a_failure(self):
        warnings = []
        read_launches(DETAILS.replace('"msecond"', '"fortnight"'), warnings)
        self.assertEqual(len(warnings), 1)
        self.assertIn("fortnight", warnings[0])

    def test_text_without_an_ncu_table_is_refused(self):
        with self.assertRaises(NcuCsvError):
            read_launches("==PROF== No kernels were profiled.\n", [])

    def test_short_names_drop_return_type_namespaces_and_parameters(self):
        self.assertEqual(short_name(SPMM), "spmm_row_kernel<float>")
        self.assertEqual(short_name("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"
                                    "(Params)"), "Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>")
        self.assertEqual(short_name("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
                         "ncclDevKernel_AllGather_RING_LL")
        self.assertTrue(short_name("k<" + "x" * 100 + ">").endswith("…"))

    def test_markdown_sorts_by_time_and_ends_with_the_totals(self):
        rows, total = aggregate(read_launches(RAW, []))
        md = markdown(rows, total, "products epoch", top=1).splitlines()
        self.assertEqual(md[0], "### products epoch")
        self.assertTrue(md[4].startswith("| `spmm_row_kernel<float>` | 2 | 2.000 | 99.9 | 1000.0 | 2000.00 | 2000 |"))
        self.assertTrue(md[5].startswith("| 1 more kernels | 1 | 0.002 |"))
        self.assertTrue(md[6].startswith("| **all 2 kernels** | 3 | 2.002 |"))

    def test_the_command_line_writes_markdown_and_json(self):
        with tempfile.TemporaryDirectory() as d:
            paths = [os.path.join(d, n) for n in ("a.csv", "b.csv", "t.json", "t.md")]
            for p, text in zip(paths, (RAW, DETAILS)):
                with open(p, "w") as f:
                    f.write(text)
            r = subprocess.run([sys.executable, SCRIPT, paths[0], paths[1], "--json", paths[2], "--markdown",
                                paths[3], "--title", "t"], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(paths[2]) as f:
                j = json.load(f)
            self.assertEqual(j["kernels"][0]["name"], SPMM)
            self.assertEqual(j["kernels"][0]["calls"], 4)
            self.assertEqual(j["total"]["calls"], 6)
            with open(paths[3]) as f:
                self.assertEqual(f.read(), r.stdout)
            r = subprocess.run([sys.executable, SCRIPT, os.path.join(d, "missing.csv")], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)


if __name__ == "__main__":
    unittest.main()
