#!/usr/bin/env python3
"""tools/sanitize_log.py judges compute-sanitizer logs: hand-made logs in the tool's formats (2022-2025 releases)."""
import os
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from sanitize_log import judge  # noqa: E402

DOCTEST_OK = """[doctest] test cases:  14 |  14 passed | 0 failed | 0 skipped
[doctest] assertions: 900 | 900 passed | 0 failed |
[doctest] Status: SUCCESS!
"""
DOCTEST_FAILED = """[doctest] test cases:  2 |  1 passed | 1 failed | 0 skipped
[doctest] Status: FAILURE!
"""
CLEAN_TAIL = """========= LEAK SUMMARY: 0 bytes leaked in 0 allocations
========= ERROR SUMMARY: 0 errors
"""
NCCL_PROBE = """========= Program hit CUDA_ERROR_NOT_FOUND (error 500) due to "named symbol not found" on CUDA API call to cuGetProcAddress.
=========     Saved host backtrace up to driver entry point at error
=========     Host Frame: [0x2d1e3a]
=========                in /lib64/libcuda.so.1
=========     Host Frame:misc/cudawrap.cc:149:cudaLibraryInit() [0x5ae6f]
=========                in /usr/lib/x86_64-linux-gnu/libnccl.so.2
=========     Host Frame:gcnpart::engine::NcclCommunicator::NcclCommunicator() [0x1234]
=========                in /work/main/build/gpu/tests/test_engine
=========
"""
OWN_API_ERROR = """========= Program hit cudaErrorInvalidValue (error 1) due to "invalid argument" on CUDA API call to cudaMemcpyAsync.
=========     Saved host backtrace up to driver entry point at error
=========     Host Frame: cuMemcpyAsync in libcuda.so [0x3f0a1b]
=========                in /usr/lib/x86_64-linux-gnu/libcuda.so.1
=========     Host Frame: cudaMemcpyAsync [0x5a1c2]
=========                in /work/main/build/gpu/tests/test_kernels
=========
"""
INVALID_READ = """========= Invalid __global__ read of size 4 bytes
=========     at void gcnpart::kernels::detail::spmm_row_kernel<float>(gcnpart::kernels::detail::SpmmArgs<float>, int *)+0x1a0 in /work/main/kernels/detail/spmm.cu:210
=========     by thread (31,0,0) in block (7,0,0)
=========     Address 0x7f1200000400 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f1200000000 of size 1024 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========     Host Frame: cuLaunchKernel in libcuda.so [0x3f0a1b]
=========                in /usr/lib/x86_64-linux-gnu/libcuda.so.1
=========
"""


def log(*parts):
    return "========= COMPUTE-SANITIZER\n" + "".join(parts)


class SanitizeLogTest(unittest.TestCase):
    def test_a_clean_memcheck_run_of_a_doctest_binary_passes(self):
        v = judge(log(DOCTEST_OK, CLEAN_TAIL), "memcheck", 0, doctest=True)
        self.assertEqual(v["status"], "PASS", v["reasons"])
        self.assertEqual(v["doctest"], {"cases": 14, "passed": 14, "failed": 0})
        self.assertEqual(v["summary"], "ERROR SUMMARY: 0 errors")
        self.assertEqual(v["leaked_bytes"], 0)

    def test_api_errors_raised_inside_nccl_are_listed_but_do_not_fail(self):
        text = log(NCCL_PROBE, NCCL_PROBE, DOCTEST_OK, "========= ERROR SUMMARY: 2 errors\n")
        v = judge(text, "memcheck", 86, doctest=True)
        self.assertEqual(v["status"], "PASS", v["reasons"])
        self.assertEqual(v["library_api_ignored"], 2)
        self.assertEqual(len(v["ignored"]), 1)
        self.assertEqual(v["ignored"][0]["count"], 2)
        self.assertIn("libnccl.so.2", v["ignored"][0]["text"])

    def test_an_api_error_from_our_code_fails(self):
        v = judge(log(OWN_API_ERROR, DOCTEST_OK, "========= ERROR SUMMARY: 1 error\n"), "memcheck", 86, doctest=True)
        self.assertEqual(v["status"], "FAIL")
        self.assertEqual(v["ours"], 1)
        self.assertIn("cudaMemcpyAsync", v["findings"][0]["text"])

    def test_an_out_of_bounds_read_fails_and_names_the_kernel_and_line(self):
        text = log(INVALID_READ, INVALID_READ, NCCL_PROBE, DOCTEST_OK, "========= ERROR SUMMARY: 3 errors\n")
        v = judge(text, "memcheck", 86, doctest=True)
        self.assertEqual(v["status"], "FAIL")
        self.assertEqual(v["ours"], 2)
        self.assertEqual(v["findings"][0]["count"], 2)
        self.assertIn("spmm_row_kernel<float>", v["findings"][0]["text"])
        self.assertIn("Invalid __global__ read of size 4 bytes", v["findings"][0]["text"])

    def test_errors_counted_by_the_tool_but_not_attributed_count_as_ours(self):
        v = judge(log(NCCL_PROBE, DOCTEST_OK, "========= ERROR SUMMARY: 5 errors\n"), "memcheck", 86, doctest=True)
        self.assertEqual(v["status"], "FAIL")
        self.assertEqual(v["ours"], 4)

    def test_a_message_the_tool_did_not_count_fails_nothing(self):
        text = log("========= Warning: a note about this platform\n", DOCTEST_OK, CLEAN_TAIL)
        v = judge(text, "memcheck", 0, doctest=True)
        self.assertEqual(v["status"], "PASS", v["reasons"])

    def test_a_leak_fails(self):
        text = log(DOCTEST_OK, "========= Leaked 1,024 bytes at 0x7f1200000000\n",
                   "=========     Saved host backtrace up to driver entry point at cudaMalloc time\n",
                   "=========     Host Frame: cuMemAlloc_v2 in libcuda.so [0x2b1c]\n",
                   "=========                in /usr/lib/x86_64-linux-gnu/libcuda.so.1\n",
                   "=========     Host Frame: ncclCommInitRank [0x5ae6f]\n",
                   "=========                in /usr/lib/x86_64-linux-gnu/libnccl.so.2\n",
                   "=========\n",
                   "========= LEAK SUMMARY: 1024 bytes leaked in 1 allocations\n",
                   "========= ERROR SUMMARY: 1 error\n")
        v = judge(text, "memcheck", 86, doctest=True)
        self.assertEqual(v["status"], "FAIL")
        self.assertEqual(v["leaked_bytes"], 1024)
        self.assertEqual(v["findings"][0]["text"], "Leaked 1,024 bytes at 0x.. [allocated in libnccl.so.2]")

    def test_a_race_error_fails_and_a_race_warning_alone_passes(self):
        race = ("========= Error: Race reported between Write access at void gcnpart::kernels::detail::"
                "column_sum_slabs_kernel<float>(const float *, long, long, float *)+0x140 in dense.cu:70\n"
                "=========     and Read access at void gcnpart::kernels::detail::column_sum_slabs_kernel<float>"
                "(const float *, long, long, float *)+0xe0 in dense.cu:72 [4 hazards]\n=========\n")
        v = judge(log(race, DOCTEST_OK, "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n"),
                  "racecheck", 86, doctest=True)
        self.assertEqual(v["status"], "FAIL")
        self.assertEqual(v["race"], {"errors": 1, "warnings": 0})
        self.assertIn("column_sum_slabs_kernel", v["findings"][0]["text"])
        warn = race.replace("Error: Race", "Warning: Race")
        v = judge(log(warn, DOCTEST_OK, "========= RACECHECK SUMMARY: 1 hazard displayed (0 errors, 1 warning)\n"),
                  "racecheck", 0, doctest=True)
        self.assertEqual(v["status"], "PASS", v["reasons"])
        self.assertEqual(v["race"]["warnings"], 1)

    def test_a_failing_test_fails_even_without_findings(self):
        text = log(DOCTEST_FAILED, "========= Target application returned an error\n", CLEAN_TAIL)
        v = judge(text, "memcheck", 1, doctest=True)
        self.assertEqual(v["status"], "FAIL")
        self.assertIn("1 test case(s) failed", v["reasons"])

    def test_a_failing_test_names_the_case_and_its_first_error(self):
        block = ("=" * 79 + "\n/work/main/tests/engine/gcn_gpu_test.cpp:13:\nTEST SUITE: gpu\n"
                 "TEST CASE:  CPU and GPU training on Cora give the same loss\n\n"
                 "/work/main/tests/engine/gcn_gpu_test.cpp:27: ERROR: CHECK( a <= b ) is NOT correct!\n"
                 "  values: CHECK( 1.0 <= 0.5 )\n\n0.5 s: CPU and GPU training on Cora give the same loss\n")
        message = ("=" * 79 + "\n/work/main/tests/engine/gcn_gpu_test.cpp:32:\nTEST SUITE: gpu\n"
                   "TEST CASE:  GCN reaches the paper's accuracy\n\n"
                   "/work/main/tests/engine/gcn_gpu_test.cpp:44: MESSAGE: cora GPU mean test accuracy 81.2 %\n\n")
        v = judge(log(message, block, "=" * 79 + "\n", DOCTEST_FAILED, CLEAN_TAIL), "memcheck", 1, doctest=True)
        self.assertEqual(v["failed"], ["CPU and GPU training on Cora give the same loss: "
                                       "ERROR: CHECK( a <= b ) is NOT correct! (gcn_gpu_test.cpp:27)"])

    def test_a_timed_out_doctest_run_names_the_last_finished_case(self):
        text = log("0.25 s: CUDA SpMM on an empty matrix\n1.50 s: CUDA reductions match the CPU sums\n")
        v = judge(text, "racecheck", 124, doctest=True)
        self.assertEqual(v["last_finished"], "CUDA reductions match the CPU sums")

    def test_a_program_that_fails_behind_library_api_errors_still_fails(self):
        text = log(NCCL_PROBE, "gcnpart: error: boom\n", "========= Target application returned an error\n",
                   "========= ERROR SUMMARY: 1 error\n")
        v = judge(text, "memcheck", 86)
        self.assertEqual(v["status"], "FAIL")
        self.assertIn("program failed", v["reasons"])

    def test_a_timeout_or_a_missing_summary_fails(self):
        v = judge(log("[doctest] running...\n"), "memcheck", 124, doctest=True)
        self.assertEqual(v["status"], "FAIL")
        self.assertIn("timed out", v["reasons"])
        v = judge(log(DOCTEST_OK), "synccheck", 0, doctest=True)
        self.assertEqual(v["status"], "FAIL")
        self.assertTrue(any("no sanitizer summary" in r for r in v["reasons"]))

    def test_a_device_the_tool_refuses_fails_with_its_message(self):
        v = judge(log("========= Error: Device not supported\n"), "memcheck", 1)
        self.assertEqual(v["status"], "FAIL")
        self.assertTrue(v["reasons"][0].startswith("sanitizer failed: Error: Device not supported"), v["reasons"])
        text = log("========= Error: Device not supported\n", "========= ERROR SUMMARY: 0 errors\n")
        v = judge(text, "memcheck", 1)  # it summarised, but the program it could not watch failed
        self.assertEqual(v["status"], "FAIL")
        self.assertEqual(v["tool_messages"], ["Error: Device not supported"])

    def test_a_tool_warning_after_which_it_finished_is_a_note(self):
        text = log("========= Warning: this feature is not supported by racecheck\n", DOCTEST_OK,
                   "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n")
        v = judge(text, "racecheck", 0, doctest=True)
        self.assertEqual(v["status"], "PASS", v["reasons"])
        self.assertEqual(len(v["tool_messages"]), 1)
        text = log("========= Internal Sanitizer Error: the tool broke\n", DOCTEST_OK, CLEAN_TAIL)
        self.assertEqual(judge(text, "memcheck", 0, doctest=True)["status"], "FAIL")

    def test_a_doctest_binary_that_never_printed_its_summary_fails(self):
        v = judge(log(CLEAN_TAIL), "memcheck", 0, doctest=True)
        self.assertEqual(v["status"], "FAIL")
        v = judge(log(CLEAN_TAIL), "memcheck", 0)  # gcnpart train: the exit status is what counts
        self.assertEqual(v["status"], "PASS", v["reasons"])

    def test_the_command_line_prints_one_verdict_line_and_appends_json(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.log")
            with open(path, "w") as f:
                f.write(log(INVALID_READ, DOCTEST_OK, "========= ERROR SUMMARY: 1 error\n"))
            jsonl = os.path.join(d, "r.jsonl")
            r = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "sanitize_log.py"), path, "--tool",
                                "memcheck", "--rc", "86", "--name", "test_kernels", "--seconds", "12.3", "--doctest",
                                "--jsonl", jsonl], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1, r.stderr)
            first = r.stdout.splitlines()[0]
            self.assertTrue(first.startswith("FAIL  memcheck   test_kernels"), first)
            self.assertIn("12.3 s", first)
            self.assertIn("14 cases", first)
            self.assertIn("ERROR SUMMARY: 1 error", first)
            self.assertIn("spmm_row_kernel", r.stdout.splitlines()[1])
            with open(jsonl) as f:
                self.assertEqual(len(f.readlines()), 1)


if __name__ == "__main__":
    unittest.main()
