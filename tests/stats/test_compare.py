#!/usr/bin/env python3
"""harness/compare.py on the synthetic pairs of tests/stats/ and on today's files
(tests/plots/a.json, b.json); plots/compare.gp on its data.

    test_compare.py [AA | TwoX | Witness | MemoryProbe | Builds | Unshared | OldFormat
                     | NotTimed | Describe | Usage | Malformed | KeepsPrevious | Plot]
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import xml.etree.ElementTree as ET

import helpers

PLOTS_A = os.path.join(helpers.ROOT, "tests", "plots", "a.json")
PLOTS_B = os.path.join(helpers.ROOT, "tests", "plots", "b.json")


class Case(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stats-compare-")
        self.out = os.path.join(self.tmp, "out")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def compare(self, a, b, *args, status=0):
        p = helpers.run_compare(a, b, "--out", self.out, *args)
        self.assertEqual(p.returncode, status, p.stdout + p.stderr)
        return p

    def text(self):
        with open(os.path.join(self.out, "compare.txt")) as f:
            return f.read()

    def rows(self):
        return helpers.read_tsv(os.path.join(self.out, "compare.tsv"))

    def kernels(self):
        return helpers.read_tsv(os.path.join(self.out, "compare_kernels.tsv"))

    def variant(self, source, **context):
        """A copy of a result file whose context fields (every part's) are changed."""
        with open(source) as f:
            data = json.load(f)
        for ctx in [data["context"]] + data.get("contexts", []):
            ctx.update(context)
        path = os.path.join(self.tmp, "variant.json")
        with open(path, "w") as f:
            json.dump(data, f)
        return path


class AA(Case):
    """The same machine and build measured twice: no verdict says faster or slower."""

    def test_aa(self):
        self.compare(helpers.fixture("aa_a.json"), helpers.fixture("aa_b.json"))
        rows = self.rows()
        self.assertEqual(len(rows), 17)
        verdicts = {r["verdict"] for r in rows} | {k["verdict"] for k in self.kernels()}
        self.assertLessEqual(verdicts, {"equivalent", "inconclusive"}, verdicts)
        self.assertIn("equivalent", verdicts)
        self.assertTrue(all(r["one_process"] == "0" for r in rows))
        self.assertNotIn("one round only", self.text())
        # the machine's state: the same witness in both runs
        self.assertIn("Machine state: the witness", self.text())
        self.assertRegex(self.text(), r"\n1 thread +0\.[12]\d* \[")
        self.assertNotIn("beyond the band", self.text())


class TwoX(Case):
    """B twice as slow everywhere, on 4 cores against 2: every verdict slower, the
    all-cores rows paired as threads:all(2|4)."""

    def test_twox(self):
        p = self.compare(helpers.fixture("aa_a.json"), helpers.fixture("twox_b.json"))
        rows, kernels = self.rows(), self.kernels()
        self.assertEqual({r["verdict"] for r in rows}, {"slower"})
        self.assertEqual({k["verdict"] for k in kernels}, {"slower"})
        for r in rows:
            self.assertTrue(float(r["ratio_low"]) < 2 < float(r["ratio_high"]) or
                            abs(float(r["ratio"]) - 2) < 0.1, r)
        paired = [r for r in rows if r["threads"] == "all(2|4)"]
        self.assertEqual(len(paired), 6)
        self.assertIn("grid_sorted/uniform/n:100000/threads:all(2|4)", self.text())
        self.assertIn("Synthetic CPU A, 2 cores (host alpha)", self.text())
        self.assertIn("Synthetic CPU B, 4 cores (host beta)", self.text())
        self.assertIn("Per kernel: geometric mean of B/A over n", self.text())
        self.assertEqual(p.stdout, self.text())
        # the witness twice as long: the machines differ, and the report says so
        self.assertRegex(self.text(), r"\n1 thread .* (1\.9|2\.0)\d* \[[0-9., ]+\] +slower")
        self.assertIn("beyond the band (1 thread)", self.text())


class Witness(Case):
    """The machine state: compared only when the witness is the same work (what,
    compiler, flags), with no verdict for too few processes, and the slots found in
    one run only named."""

    def test_not_comparable(self):
        a = helpers.fixture("aa_a.json")
        for field in ("compiler", "witness"):
            self.compare(a, self.variant(helpers.fixture("aa_b.json"), **{field: "other"}))
            self.assertIn(f"Machine state: not compared ({field} differs", self.text())
        self.compare(a, self.variant(helpers.fixture("aa_b.json"), compile_flags="-O2"),
                     "--allow-different-builds")
        self.assertIn("Machine state: not compared (compile_flags differs", self.text())

    def test_too_few(self):
        with open(helpers.fixture("aa_b.json")) as f:
            data = json.load(f)
        one = [c for c in data["contexts"] if len(c["witness_ms"].split()) == 1]
        two = [c for c in data["contexts"] if len(c["witness_ms"].split()) == 2]
        for c in one[2:]:  # two 1-thread processes keep their witness
            del c["witness_ms"]
        for c in two:      # no 2-thread process has one
            c["witness_ms"] = "not measured (out of memory)"
        path = os.path.join(self.tmp, "few.json")
        with open(path, "w") as f:
            json.dump(data, f)
        self.compare(helpers.fixture("aa_a.json"), path)
        text = self.text()
        self.assertRegex(text, r"\n1 thread .*too few processes \(fewer than 3\)")
        self.assertIn("Not compared: 2 threads: thread 0 (only in A); "
                      "2 threads: thread 1 (only in A).", text)


class Builds(Case):
    """Different commits or compile flags: refused (exit 2, the field named) unless
    --allow-different-builds."""

    def test_builds(self):
        a = helpers.fixture("aa_a.json")
        for field, value in (("git_commit", "0" * 40), ("compile_flags", "-O2")):
            b = self.variant(helpers.fixture("aa_b.json"), **{field: value})
            shutil.rmtree(self.out, ignore_errors=True)
            p = self.compare(a, b, status=2)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn(field, p.stderr)
            other = {"git_commit", "compile_flags"} - {field}
            self.assertNotIn(other.pop(), p.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.out, "compare.txt")))
            self.compare(a, b, "--allow-different-builds")
            self.assertIn(f"Different builds (compared anyway): {field} differs", self.text())


class MemoryProbe(Case):
    """The two runs' memory probes side by side, per thread count both have; files
    without probes are not compared."""

    def probed(self, source, name, slow_every=0):
        """source with a memory probe on every repetition, 1 ms, but 3 ms on every
        slow_every-th repetition of 2 threads (none when 0)."""
        with open(source) as f:
            data = json.load(f)
        k = 0
        for b in data["benchmarks"]:
            if b.get("run_type") == "iteration":
                b["mem_probe_ms"] = 1.0
                if "/threads:2/" in b["name"]:
                    k += 1
                    if slow_every and k % slow_every == 0:
                        b["mem_probe_ms"] = 3.0
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            json.dump(data, f)
        return path, k

    def test_side_by_side(self):
        a, _ = self.probed(helpers.fixture("aa_a.json"), "a.json")
        b, reps = self.probed(helpers.fixture("aa_b.json"), "b.json", slow_every=4)
        self.compare(a, b)
        text = self.text()
        self.assertIn("Memory probe after each repetition (1.5x the run's quick value", text)
        self.assertRegex(text, r"\n  A: 1 thread: 1 \[1, 1\], 1-1 over \d+ repetitions; "
                               r"quick 1, 0 slow\n")
        self.assertRegex(text, r"\n  A: 2 threads: .*; quick 1, 0 slow\n")
        self.assertRegex(text, rf"\n  B: 2 threads: .*, 1-3 over {reps} repetitions; quick 1, "
                               rf"{reps // 4} slow\n")

    def test_without_probes(self):
        a, _ = self.probed(helpers.fixture("aa_a.json"), "a.json")
        self.compare(a, helpers.fixture("aa_b.json"))
        self.assertIn("Memory probe: not compared", self.text())


class Unshared(Case):
    """The configurations found in only one file are listed, not compared."""

    def test_unshared(self):
        self.compare(helpers.fixture("aa_a.json"), helpers.fixture("twox_b.json"))
        text = self.text()
        self.assertIn("only in A: naive/dambreak/threads:1 at n = 10000", text)
        self.assertIn("only in B: grid_dense/uniform/threads:1 at n = 100000", text)
        names = {r["configuration"] for r in self.rows()}
        self.assertNotIn("naive/dambreak/n:10000/threads:1", names)
        self.assertNotIn("grid_dense/uniform/n:100000/threads:1", names)


class OldFormat(Case):
    """Today's files (one process, no rounds) still compare; every verdict carries
    the one-process mark and its footnote."""

    def test_old_format(self):
        p = self.compare(PLOTS_A, PLOTS_B, status=2)  # they come from two builds
        self.assertIn("git_commit", p.stderr)
        self.compare(PLOTS_A, PLOTS_B, "--allow-different-builds")
        text = self.text()
        self.assertIn("hash_parallel/uniform/n:1000/threads:1 ", text)
        self.assertIn("hash_parallel/uniform/n:1000/threads:all(2|1)", text)
        self.assertIn("* one round only", text)
        self.assertIn("Machine state: not compared", text)
        table = next(p for p in text.split("\n\n") if p.startswith("configuration"))
        table = table.splitlines()[1:]
        self.assertTrue(table)
        self.assertTrue(all(line.endswith("*") for line in table), table)
        self.assertTrue(all(r["one_process"] == "1" for r in self.rows()))
        with open(os.path.join(self.out, "data", "meta.gp")) as f:
            self.assertIn("one_process = 1", f.read())


class NotTimed(Case):
    """A configuration one side never timed (refused in every round, 0 rounds) is
    'not timed', not 'one round': no mark, one_process 0, no one-round note; one
    timed in a single round is marked, with the note the summary shares."""

    def refused(self, source, name, rounds):
        """source with name's repetitions in `rounds` refused (error entries)."""
        with open(source) as f:
            data = json.load(f)
        for b in data["benchmarks"]:
            if b["name"].startswith(name + "/") and b["round"] in rounds:
                b.update(error_occurred=True, error_message="refused: out of memory")
        path = os.path.join(self.tmp, f"refused-{len(rounds)}.json")
        with open(path, "w") as f:
            json.dump(data, f)
        return path

    def test_zero_rounds(self):
        name = "grid_sorted/uniform/n:100000/threads:2"
        b = self.refused(helpers.fixture("aa_b.json"), name, {1, 2, 3})
        self.compare(helpers.fixture("aa_a.json"), b)
        row = next(r for r in self.rows() if r["configuration"] == name)
        self.assertEqual([row["verdict"], row["one_process"], row["b_rounds"]],
                         ["not timed", "0", "0"])
        self.assertTrue(all(r["one_process"] == "0" for r in self.rows()))
        line = next(x for x in self.text().splitlines() if x.startswith(name + " "))
        self.assertTrue(line.endswith("not timed (B: refused: out of memory)"), line)
        self.assertNotIn("one round only", self.text())
        with open(os.path.join(self.out, "data", "meta.gp")) as f:
            self.assertIn("one_process = 0", f.read())

    def test_one_round(self):
        import results
        name = "grid_sorted/uniform/n:100000/threads:2"
        b = self.refused(helpers.fixture("aa_b.json"), name, {2, 3})
        self.compare(helpers.fixture("aa_a.json"), b)
        row = next(r for r in self.rows() if r["configuration"] == name)
        self.assertEqual([row["one_process"], row["b_rounds"]], ["1", "1"])
        line = next(x for x in self.text().splitlines() if x.startswith(name + " "))
        self.assertTrue(line.endswith(results.ROUNDS_MARK), line)
        self.assertIn(results.ONE_PROCESS_NOTE, self.text())


class Describe(Case):
    """Each run's header line gives, besides machine, date, commit and rounds, the
    compiler, flags, code path and load its processes recorded (results.provenance:
    a field they differ in says so)."""

    def test_build_and_load(self):
        import results
        import benchdata
        with open(helpers.fixture("aa_b.json")) as f:
            data = json.load(f)
        for k, ctx in enumerate(data["contexts"]):
            ctx.update(isa_path="avx512 (paths of this build: avx512 avx2 generic)",
                       load_average=f"{0.5 + 0.05 * k:.2f} 0.4 0.3")
        b = os.path.join(self.tmp, "b.json")
        with open(b, "w") as f:
            json.dump(data, f)
        self.compare(helpers.fixture("aa_a.json"), b)
        header = self.text().splitlines()[2]
        self.assertTrue(header.startswith(f"B: {b}: Synthetic CPU A"), header)
        self.assertIn("; compiler GNU 12.2.0; compile_flags -ffp-contract=off -fno-math-errno "
                      "-march=native; isa_path avx512 (paths of this build: avx512 avx2 "
                      "generic); load_average (1 min at each process's start: median over the "
                      f"{len(data['contexts'])} processes [95 % interval], range) ", header)
        self.assertTrue(header.endswith(results.provenance(benchdata.load(b), (
            "load_average",))), header)
        a = self.text().splitlines()[1]
        self.assertIn("; compiler GNU 12.2.0; compile_flags ", a)
        self.assertNotIn("load_average", a)  # A's processes did not record one


class Usage(Case):
    """Usage errors exit 2; a missing, unreadable or malformed file exits 1."""

    def test_usage(self):
        a = helpers.fixture("aa_a.json")
        self.assertEqual(helpers.run_compare(a, "--out", self.out).returncode, 2)
        self.assertEqual(helpers.run_compare(a, a).returncode, 2)  # no --out
        self.compare(a, a, "--band", "1.5", status=2)
        bad = os.path.join(self.tmp, "bad.json")
        with open(bad, "w") as f:
            f.write("{not json")
        p = self.compare(a, bad, status=1)
        self.assertIn("not JSON", p.stderr)

    def test_cannot_read(self):
        """A file that is missing or cannot be read (a folder) is exit 1, as the
        docstring and docs/comparing.md say, not a usage error: one line naming it, nothing
        written."""
        a = helpers.fixture("aa_a.json")
        for path in (os.path.join(self.tmp, "missing.json"), self.tmp):
            for args in ((a, path), (path, a)):
                with self.subTest(path=path, side=args.index(path)):
                    p = self.compare(*args, status=1)
                    self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
                    self.assertTrue(p.stderr.startswith(f"compare.py: {path}: cannot read: "),
                                    p.stderr)
                    self.assertFalse(os.path.exists(self.out))


class Malformed(Case):
    """A malformed result file, as A or as B: one line naming the file, the entry and
    the field (exit 1), never a traceback, and nothing written."""

    def refused(self, a, b, bad, says):
        p = self.compare(a, b, status=1)
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        self.assertTrue(p.stderr.startswith(f"compare.py: {bad}: "), p.stderr)
        self.assertIn(says, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertFalse(os.path.exists(self.out))

    def test_malformed(self):
        good = helpers.fixture("aa_b.json")
        bad = os.path.join(self.tmp, "bad.json")
        for what, content, says in helpers.malformed():
            with self.subTest(what):
                with open(bad, "wb") as f:
                    f.write(content)
                self.refused(bad, good, bad, says)
        self.refused(good, bad, bad, says)  # B is checked as A is


class KeepsPrevious(Case):
    """A comparison that fails (no configuration in common, a malformed file,
    different builds, an output it cannot write) leaves the previous comparison's
    files byte for byte as they were, and no .tmp file behind."""

    def snapshot(self):
        """{path under --out: bytes} of every file there."""
        out = {}
        for folder, _, names in os.walk(self.out):
            for name in names:
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    out[os.path.relpath(path, self.out)] = f.read()
        return out

    def test_keeps_previous(self):
        a, b = helpers.fixture("aa_a.json"), helpers.fixture("twox_b.json")
        self.compare(a, b)
        before = self.snapshot()
        self.assertEqual(sorted(before), ["compare.tsv", "compare.txt", "compare_kernels.tsv",
                                          os.path.join("data", "compare.dat"),
                                          os.path.join("data", "meta.gp")])
        empty = helpers.temp_fixture(self, {"context": {}, "benchmarks": []})
        p = self.compare(a, empty, "--allow-different-builds", status=1)
        self.assertEqual(p.stderr, f"compare.py: {a} (17 configurations) and {empty} (0) "
                                   "share no configuration\n")
        self.assertEqual(p.stdout, "")
        self.assertEqual(self.snapshot(), before)
        _, content, _ = next(m for m in helpers.malformed() if m[0] == "no real_time")
        bad = os.path.join(self.tmp, "bad.json")
        with open(bad, "wb") as f:
            f.write(content)
        self.compare(bad, b, status=1)
        self.assertEqual(self.snapshot(), before)
        self.compare(a, self.variant(b, git_commit="0" * 40), status=2)
        self.assertEqual(self.snapshot(), before)

    def test_write_fails(self):
        """The last output cannot be written (a folder where its .tmp file goes): the
        others already written are not moved over the previous ones."""
        a, b = helpers.fixture("aa_a.json"), helpers.fixture("aa_b.json")
        self.compare(a, helpers.fixture("twox_b.json"))
        before = self.snapshot()
        blocker = os.path.join(self.out, "data", "meta.gp.tmp")
        os.mkdir(blocker)
        p = self.compare(a, b, status=1)
        self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
        self.assertIn(f"compare.py: cannot write {blocker}: ", p.stderr)
        self.assertEqual(self.snapshot(), before)
        left = [name for _, _, names in os.walk(self.out) for name in names
                if name.endswith(".tmp")]
        self.assertEqual(left, [])
        os.rmdir(blocker)  # and with the way clear, every file is replaced
        self.compare(a, b)
        after = self.snapshot()
        self.assertEqual(sorted(after), sorted(before))
        self.assertTrue(all(after[k] != before[k] for k in before), "a file was not replaced")


@unittest.skipUnless(shutil.which("gnuplot"), "gnuplot is not installed")
class Plot(Case):
    """plots/compare.gp draws compare.png and compare.svg from compare.py's data,
    and a figure with nothing on uniform too."""

    def draw(self):
        for fmt in ("png", "svg"):
            subprocess.run(["gnuplot", "-e", f"data='{self.out}/data'; out='{self.out}'; "
                            f"fmt='{fmt}'; plots='{helpers.ROOT}/plots'",
                            os.path.join(helpers.ROOT, "plots", "compare.gp")],
                           check=True, capture_output=True, timeout=60)
        with open(os.path.join(self.out, "compare.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        root = ET.parse(os.path.join(self.out, "compare.svg")).getroot()
        self.assertTrue(root.tag.endswith("svg"))
        return "".join(root.itertext())

    def test_plot(self):
        self.compare(helpers.fixture("aa_a.json"), helpers.fixture("twox_b.json"))
        with open(os.path.join(self.out, "data", "compare.dat")) as f:
            blocks = f.read().strip().split("\n\n\n")
        self.assertEqual(len(blocks), 5)
        self.assertIn('"grid_sorted T=all(2|4)"', blocks[-1].splitlines()[0])
        n, ratio, low, high, code = blocks[0].splitlines()[1].split()
        self.assertTrue(float(low) <= float(ratio) <= float(high))
        self.assertEqual(code, "2")  # slower
        text = self.draw()
        self.assertIn("B slower", text)

    def test_no_uniform(self):
        b = self.variant(helpers.fixture("aa_a.json"))
        with open(b) as f:
            data = json.load(f)
        data["benchmarks"] = [x for x in data["benchmarks"] if "/uniform/" not in x["name"]]
        with open(b, "w") as f:
            json.dump(data, f)
        self.compare(b, helpers.fixture("aa_b.json"))
        self.assertIn("no configuration on uniform", self.draw())


if __name__ == "__main__":
    unittest.main()
