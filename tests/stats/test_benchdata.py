#!/usr/bin/env python3
"""harness/benchdata.py: the sweep's merged files with rounds, and today's files
without them (tests/plots/*.json).

    test_benchdata.py [Loader | Tables | Peers | OneShot | MemoryProbe
                       | WorkloadsAgainstHeadline | Flatten | Provenance | Aggregates
                       | FewerRounds | Malformed | Committed | Counters | Names
                       | Repetitions | Contexts | Times | Reported | NoTraceback]
"""
import concurrent.futures
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

import helpers
import benchdata
import stats


class Loader(unittest.TestCase):

    def test_rounds(self):
        run = benchdata.load(helpers.fixture("aa_a.json"))
        self.assertEqual(run.rounds, stats.DEFAULT_ROUNDS)
        self.assertEqual(run.context["rounds"], stats.DEFAULT_ROUNDS)
        self.assertGreater(len(run.contexts), 1)
        self.assertEqual({c["round"] for c in run.contexts}, {1, 2, 3})
        self.assertEqual(run.machine_label(), "Synthetic CPU A, 2 cores (host alpha)")
        c = run.configs[("grid_sorted", "uniform", 10000, 2)]
        self.assertEqual(c.name, "grid_sorted/uniform/n:10000/threads:2")
        self.assertEqual(c.round_ids, [1, 2, 3])
        self.assertEqual([len(r) for r in c.rounds], [stats.DEFAULT_REPETITIONS] * 3)
        self.assertEqual(c.repetitions, stats.DEFAULT_ROUNDS * stats.DEFAULT_REPETITIONS)
        self.assertEqual(c.verdict, "VALID vs naive")
        self.assertEqual(c.counters["contacts"], 70000)
        # the aggregates (a median per round) are not repetitions
        with open(helpers.fixture("aa_a.json")) as f:
            first = [b["real_time"] for b in json.load(f)["benchmarks"]
                     if b["run_name"].startswith(c.name + "/") and b["round"] == 1
                     and b["run_type"] == "iteration"]
        self.assertEqual(list(c.rounds[0]), first)
        self.assertAlmostEqual(c.median, float(np.median(np.concatenate(c.rounds))))
        self.assertEqual([k for k, _ in run.lines("uniform")][:1], ["naive"])
        self.assertEqual(run.workloads(), ["uniform", "dambreak"])

    def test_errors(self):
        run = benchdata.load(helpers.fixture("twox_b.json"))
        c = run.configs[("grid_dense", "uniform", 100000, 1)]
        self.assertEqual(c.rounds, [])
        self.assertIsNone(c.median)
        self.assertTrue(c.verdict.startswith("grid_dense: refused"))
        self.assertEqual(run.max_threads(), 4)

    def test_witness(self):
        """Every process's witness, by part and by slot and round; the summary names
        the processes that started slow, by the configurations they measured."""
        import results
        run = benchdata.load(helpers.fixture("aa_a.json"))
        witness = run.witness()
        self.assertEqual(len(witness), len(run.contexts))
        self.assertEqual({len(t) for _, t in witness.values()}, {1, 2})
        self.assertEqual({r for r, _ in witness.values()}, {1, 2, 3})
        slots = run.witness_rounds()
        self.assertEqual(list(slots), ["1 thread", "2 threads: thread 0", "2 threads: thread 1"])
        self.assertTrue(all(len(rounds) == 3 for rounds in slots.values()))
        self.assertEqual(sum(len(r) for rounds in slots.values() for r in rounds),
                         sum(len(t) for _, t in witness.values()))
        self.assertTrue(all(0.15 < np.median(np.concatenate(v)) < 0.25 for v in slots.values()))
        c = run.configs[("grid_sorted", "uniform", 10000, 2)]
        self.assertEqual(sorted(c.parts), [1, 2, 3])
        self.assertTrue(all(p in witness for p in c.parts.values()))
        lines = results.witness_lines(run, markdown=False)
        self.assertTrue(any(line.startswith("  1 thread: 0.") for line in lines), lines)
        self.assertFalse(any("started with a witness" in line for line in lines), lines)
        # one process 30 % slow on its thread 1: named by what it measured
        part = c.parts[2]
        slow = 1.3 * np.median(np.concatenate(slots["2 threads: thread 1"]))
        contexts = [dict(ctx, witness_ms=f"{ctx['witness_ms'].split()[0]} {slow:.4g}")
                    if ctx.get("part") == part else ctx for ctx in run.contexts]
        text = "\n".join(results.witness_lines(
            benchdata.Run(run.path, run.context, contexts, run.configs), markdown=False))
        self.assertIn(f"1 of {len(run.contexts)} processes started with a witness 1.10x or more",
                      text)
        self.assertRegex(text, r"round 2, uniform n=10000 threads=2: the witness 1\.[23]\dx")
        # unreadable or missing values are left out; files without any: nothing to say
        contexts = [dict(ctx, witness_ms="0 nan") if ctx.get("part") == part else ctx
                    for ctx in run.contexts]
        self.assertNotIn(part, benchdata.Run(run.path, run.context, contexts, {}).witness())
        old = benchdata.load(os.path.join(helpers.ROOT, "tests", "plots", "a.json"))
        self.assertEqual(old.witness(), {})
        self.assertEqual(results.witness_lines(old, markdown=False), [])

    def test_old_format(self):
        run = benchdata.load(os.path.join(helpers.ROOT, "tests", "plots", "a.json"))
        self.assertEqual(run.rounds, 1)
        self.assertEqual(run.contexts, [run.context])
        c = run.configs[("hash_parallel", "uniform", 1000, 2)]
        self.assertEqual(len(c.rounds), 1)
        self.assertEqual(c.repetitions, 3)  # the aggregates are not counted
        self.assertEqual(run.machine_label(), "AMD EPYC, 2 cores (host vm)")  # no ISA recorded

    def test_machine_label(self):
        """Two CPUs a hypervisor names alike are told apart by signature and ISA."""
        ctx = {"cpu_model": "AMD EPYC", "cores_online": "2", "host_name": "vm",
               "cpu_signature": "family 25 model 1 stepping 1",
               "isa": "build: avx2 avx sse4.2; cpu: avx2 yes, avx512f no"}
        zen3 = benchdata.Run("a", ctx, [ctx], {})
        self.assertEqual(zen3.machine_label(),
                         "AMD EPYC (family 25 model 1 stepping 1, AVX2), 2 cores (host vm)")
        ctx = dict(ctx, cpu_signature="not visible", isa="build: avx2; cpu: avx2 yes, avx512f yes")
        self.assertEqual(benchdata.Run("b", ctx, [ctx], {}).machine_label(),
                         "AMD EPYC (AVX-512), 2 cores (host vm)")

    def test_units_and_refusals(self):
        entry = {"name": "naive/uniform/n:100/threads:1/manual_time", "run_type": "iteration",
                 "real_time": 2500.0, "time_unit": "us"}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            with open(path, "w") as f:
                json.dump({"context": {}, "benchmarks": [entry]}, f)
            self.assertEqual(list(benchdata.load(path).configs.values())[0].rounds[0][0], 2.5)
            # one configuration in two processes of the same round
            with open(path, "w") as f:
                json.dump({"benchmarks": [dict(entry, round=1, part="r1-g001-t1"),
                                          dict(entry, round=1, part="r1-g002-t1")]}, f)
            with self.assertRaisesRegex(benchdata.FormatError, "two processes in round 1"):
                benchdata.load(path)
            with open(path, "w") as f:
                f.write("[1, 2]")
            with self.assertRaises(benchdata.FormatError):
                benchdata.load(path)



class Tables(unittest.TestCase):
    """The kernels' order and reference come from the run's own tables (the
    context's kernel_table and workload_table) when it has them, from the old
    built-in lists for files written before."""

    def load_with(self, kernels, workloads):
        data = helpers.load_fixture("aa_a.json")
        data["context"]["kernel_table"] = json.dumps(kernels)
        data["context"]["workload_table"] = json.dumps(workloads)
        return benchdata.load(helpers.temp_fixture(self, data))

    def test_table_order_and_reference(self):
        run = self.load_with([{"name": "grid_sorted", "reference": 0},
                              {"name": "naive", "reference": 0},
                              {"name": "other", "reference": 1}],
                             [{"name": "dambreak", "headline": True}, {"name": "uniform"}])
        kernels = [k for k, _ in run.lines("uniform")]
        self.assertLess(kernels.index("grid_sorted"), kernels.index("naive"))
        self.assertEqual(run.workloads(), ["dambreak", "uniform"])
        self.assertEqual(run.reference_kernel(), "other")
        self.assertEqual(run.headline_workload(), "dambreak")
        self.assertEqual(run.kernel_names()[-2:], benchdata.FLOORS)

    def test_old_files(self):
        run = benchdata.load(helpers.fixture("aa_a.json"))
        self.assertNotIn("kernel_table", run.context)
        self.assertEqual(run.reference_kernel(), "naive")
        self.assertEqual(run.headline_workload(), "uniform")
        self.assertEqual(run.kernel_names(),
                         benchdata.OLD_KERNELS + [benchdata.ONESHOT] + benchdata.FLOORS)
        self.assertEqual(run.workloads(), ["uniform", "dambreak"])

    def test_malformed_table(self):
        """A table that is not JSON is ignored, like a missing one."""
        data = helpers.load_fixture("aa_a.json")
        data["context"]["kernel_table"] = "not json"
        run = benchdata.load(helpers.temp_fixture(self, data))
        self.assertEqual(run.reference_kernel(), "naive")

    def test_malformed_entries(self):
        """A table that is a JSON list holds objects with a name (a peer's with its
        library and tuning), text: the summary reads them so."""
        for key, table, says in (
                ("kernel_table", [1], "kernel_table[0] is 1, not an object"),
                ("kernel_table", [{"name": "naive"}, {}], "kernel_table[1]: name is missing"),
                ("kernel_table", [{"name": 1}], "kernel_table[0]: name is 1, not a string"),
                ("workload_table", [{"name": None}],
                 "workload_table[0]: name is null, not a string"),
                ("workload_table", [None], "workload_table[0] is null, not an object"),
                ("peer_table", [{"name": "libx", "tuning": ""}],
                 "peer_table[0]: library is missing"),
                ("peer_table", [{"name": "libx", "library": "libx 1.0", "tuning": []}],
                 "peer_table[0]: tuning is [], not a string")):
            with self.subTest(key=key, table=table):
                path, message = refusal(
                    self, lambda d: d["context"].update({key: json.dumps(table)}))
                self.assertEqual(message, f"{path}: context: {says}")
        # a kernel's other fields are read with defaults
        run = self.load_with([{"name": "naive", "reference": "1", "parallel": [],
                               "bound": None}], [{"name": "uniform", "headline": 0}])
        self.assertEqual(run.reference_kernel(), "naive")


class Peers(unittest.TestCase):
    """The other libraries (nsearch-bench's peers, the context's peer_table):
    listed after the kernels, left out of the kernels' figures, and compared
    in the summary with the featured kernels at the same and at all threads."""

    skipped = "skipped: VALID, but one search took 20.0 s, over --peer-limit 15 s"

    def setUp(self):
        data = helpers.load_fixture("aa_a.json")
        for b in data["benchmarks"]:  # naive's configurations become a serial peer's
            for key in ("name", "run_name"):
                if b.get(key, "").startswith("naive/"):
                    b[key] = "libx/" + b[key][len("naive/"):]
            if b.get("run_name", "").startswith("libx/dambreak/"):  # one over --peer-limit
                b["error_occurred"] = True
                b["error_message"] = self.skipped
        data["context"]["kernel_table"] = json.dumps(
            [{"name": "naive", "reference": 1},
             {"name": "hash_parallel", "parallel": True, "uses_table_size": True},
             {"name": "grid_sorted", "parallel": True, "bound": True}])
        data["context"]["peer_table"] = json.dumps(
            [{"name": "libx", "library": "libx 1.0", "tuning": "defaults", "parallel": False}])
        data["context"]["peers_missing"] = "liby (liby-dev)"
        self.path = helpers.temp_fixture(self, data)

    def test_order_and_features(self):
        run = benchdata.load(self.path)
        self.assertEqual(run.peer_names(), ["libx"])
        self.assertEqual(run.featured_kernels(), ["grid_sorted", "hash_parallel"])
        names = run.kernel_names()
        self.assertLess(names.index("grid_sorted"), names.index("libx"))
        self.assertIn(("libx", 1), run.lines("uniform"))
        self.assertNotIn(("libx", 1), run.lines("uniform", peers=False))

    def test_summary_ratios(self):
        import results
        f = results.Figures(self.path)
        text = "\n".join(results.peer_lines(f, markdown=True))
        self.assertIn("liby (liby-dev)", text)
        rows = [r.split(" | ") for r in text.splitlines() if r.startswith("| uniform | libx")]
        self.assertEqual([r[3] for r in rows], ["100000"])  # 100,000 is also the largest n
        peer = f.config("libx", "uniform", 100000, 1)
        for threads, column in ((1, 5), (2, 6)):
            kernel = f.config("grid_sorted", "uniform", 100000, threads)
            ratio = f.over(peer, f.est(kernel))
            self.assertAlmostEqual(ratio.value, f.est(peer).value / f.est(kernel).value)
            self.assertEqual(rows[0][column], stats.text(ratio))
            low, value, high = ratio.interval()[1], ratio.value, ratio.interval()[2]
            self.assertTrue(low <= value <= high)

    def test_untimed_peers_are_named(self):
        import results
        text = "\n".join(results.peer_lines(results.Figures(self.path), markdown=True))
        self.assertIn(f"- libx/dambreak/n:10000/threads:1: {self.skipped}", text)
        self.assertNotIn("| dambreak | libx", text)

    def test_partly_timed(self):
        """A peer skipped in one round but timed in the others is not 'not timed':
        its figures stand, and it is listed as partly timed with how many of its
        repetitions failed."""
        import results
        with open(self.path) as f:
            data = json.load(f)
        for b in data["benchmarks"]:
            if b["name"].startswith("libx/uniform/n:100000/threads:1/") and b["round"] == 2:
                b.update(error_occurred=True, error_message=self.skipped)
        f = results.Figures(helpers.temp_fixture(self, data))
        text = "\n".join(results.peer_lines(f, markdown=True))
        untimed = text.split("Not timed")[1].split("Partly timed")[0]
        self.assertIn("- libx/dambreak/n:10000/threads:1:", untimed)
        self.assertNotIn("libx/uniform", untimed)
        self.assertIn("Partly timed (the figures above rest on the repetitions that were "
                      "timed):\n- libx/uniform/n:100000/threads:1: 3 of 9 repetitions failed "
                      f"(round 2: {self.skipped})", text)
        # timed in 2 of the 3 rounds: its figures marked as resting on fewer processes
        c = f.config("libx", "uniform", 100000, 1)
        self.assertIn(f"| uniform | libx | 1 | 100000 | {stats.text(f.est(c))}* |", text)


class OneShot(unittest.TestCase):
    """oneshot (the bound kernel through ns_find_contacts, fresh memory each
    search): listed after the peers, and in the summary over the same kernel's
    reused search at the same workload, n and threads."""

    def setUp(self):
        data = helpers.load_fixture("aa_a.json")
        for b in data["benchmarks"]:  # hash_parallel's configurations become oneshot's
            for key in ("name", "run_name"):
                if b.get(key, "").startswith("hash_parallel/"):
                    b[key] = "oneshot/" + b[key][len("hash_parallel/"):]
        data["context"]["kernel_table"] = json.dumps(
            [{"name": "naive", "reference": 1},
             {"name": "grid_sorted", "parallel": True, "bound": True}])
        self.path = helpers.temp_fixture(self, data)

    def test_ratio_to_the_reused_search(self):
        import results
        f = results.Figures(self.path)
        self.assertEqual(f.run.bound_kernel(), "grid_sorted")
        names = f.run.kernel_names()
        self.assertLess(names.index("grid_sorted"), names.index("oneshot"))
        text = "\n".join(results.oneshot_lines(f, markdown=True))
        rows = [r.split(" | ") for r in text.splitlines() if r.startswith("| uniform |")]
        shots = sorted((c for c in f.run.configs.values()
                        if c.kernel == "oneshot" and c.workload == "uniform"),
                       key=lambda c: (c.threads, c.n))
        self.assertEqual(len(rows), len(shots))
        self.assertGreater(len(rows), 0)
        for row, c in zip(rows, shots):
            reused = f.est(f.config("grid_sorted", "uniform", c.n, c.threads))
            ratio = f.over(c, reused)
            self.assertAlmostEqual(ratio.value, f.est(c).value / reused.value)
            self.assertEqual([row[1], row[2]], [str(c.threads), str(c.n)])
            self.assertEqual(row[5].rstrip(" |"), stats.text(ratio))

    def test_not_in_the_breakdown(self):
        """The breakdown figure splits a search into build and query: oneshot is
        one call with no build of its own, so it has no bar there."""
        import results
        out = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, out)
        results.plotdata([results.Figures(self.path)], out)
        with open(os.path.join(out, "breakdown.dat")) as fh:
            text = fh.read()
        self.assertIn('"grid_sorted', text)
        self.assertNotIn("oneshot", text)

    def test_no_section_without_oneshot(self):
        import results
        self.assertEqual(results.oneshot_lines(results.Figures(helpers.fixture("aa_a.json")),
                                               markdown=True), [])


class MemoryProbe(unittest.TestCase):
    """The memory probe nsearch-bench times after every repetition (mem_probe_ms):
    the summary's Machine state gives its median, range and quick value (the
    PROBE_QUICK quantile) at each thread count, and Disturbances names the
    repetitions at PROBE_SLOW times the quick value or more."""

    def probed(self, slow=None):
        """aa_a.json with a probe on every repetition, 1 ms with 1 thread and 2 with
        2, but `slow` ((name prefix, round) -> ms) where given."""
        data = helpers.load_fixture("aa_a.json")
        for b in data["benchmarks"]:
            if b.get("run_type") == "iteration":
                b["mem_probe_ms"] = 2.0 if "/threads:2/" in b["name"] else 1.0
                for (prefix, rnd), ms in (slow or {}).items():
                    if b["name"].startswith(prefix) and b["round"] == rnd:
                        b["mem_probe_ms"] = ms
        return benchdata.load(helpers.temp_fixture(self, data))

    def test_steady(self):
        import results
        run = self.probed()
        self.assertEqual(results.probe_quick(run), {1: 1.0, 2: 2.0})
        lines = results.probe_lines(run, markdown=False)
        self.assertTrue(lines[0].startswith("Memory probe after each repetition"), lines)
        self.assertRegex(lines[1],
                         r"^  1 thread: 1 \[1, 1\], 1-1 over \d+ repetitions; quick 1, 0 slow$")
        self.assertRegex(lines[2],
                         r"^  2 threads: 2 \[2, 2\], 2-2 over \d+ repetitions; quick 2, 0 slow$")
        self.assertFalse(any("memory slow" in note for c in run.configs.values()
                             for note in results.disturbed(c, 2.0)))

    def test_slow_repetitions_named(self):
        import results
        name = "grid_sorted/uniform/n:10000/threads:2/"
        run = self.probed({(name, 2): 5.0})
        c = run.configs[("grid_sorted", "uniform", 10000, 2)]
        in_round_2 = len([1 for r, _ in c.entries if r == 2])
        notes = results.disturbed(c, results.probe_quick(run)[2])
        self.assertEqual(notes[0], f"memory slow in {in_round_2} of {len(c.entries)} "
                                   "repetitions (the probe up to 2.5x the quick one)")
        self.assertFalse(any("memory" in note for note in notes[1:]), notes)
        lines = results.probe_lines(run, markdown=True)
        self.assertRegex(lines[2],
                         rf"^- 2 threads: .*, 2-5 over \d+ repetitions; quick 2, "
                         rf"{in_round_2} slow$")
        text = results.summary(results.Figures(run.path), markdown=True)
        self.assertIn("## Machine state", text)
        self.assertIn(f"- {name[:-1]}: memory slow in {in_round_2} of ", text)
        # just under PROBE_SLOW: not slow
        run = self.probed({(name, 2): 2.0 * results.PROBE_SLOW * 0.99})
        self.assertFalse(any("memory slow" in note for note in results.disturbed(
            run.configs[("grid_sorted", "uniform", 10000, 2)], 2.0)))

    def test_files_without_probes(self):
        import results
        run = benchdata.load(helpers.fixture("aa_a.json"))
        self.assertEqual(results.probe_rounds(run), {})
        self.assertEqual(results.probe_lines(run, markdown=False), [])
        self.assertFalse(any("memory slow" in note for c in run.configs.values()
                             for note in results.disturbed(c, None)))


class WorkloadsAgainstHeadline(unittest.TestCase):
    """The summary's per-contact comparison of each workload with the headline
    one: t_w / (t_h * max(1, C_w / C_h)) at 100,000 and the largest n, with the
    interval from the same bootstrap replicates. grid_sorted's uniform
    configurations are copied as two workloads: dambreak 1.5 times slower with
    0.9 times the contacts (scale 1), clusters 3 times slower with 1.2 times
    the contacts (scale 1.2)."""

    COPIES = {"dambreak": (1.5, 0.9), "clusters": (3.0, 1.2)}

    def setUp(self):
        data = helpers.load_fixture("aa_a.json")
        keep = [b for b in data["benchmarks"]
                if not any(b.get("name", "").startswith(f"grid_sorted/{w}/")
                           for w in self.COPIES)]
        for w, (slower, more) in self.COPIES.items():
            for b in data["benchmarks"]:
                if b.get("name", "").startswith("grid_sorted/uniform/"):
                    b = dict(b)
                    for key in ("name", "run_name"):
                        b[key] = b[key].replace("/uniform/", f"/{w}/")
                    b["real_time"] *= slower
                    if "contacts" in b:
                        b["contacts"] = int(b["contacts"] * more)
                    keep.append(b)
        data["benchmarks"] = keep
        self.path = helpers.temp_fixture(self, data)

    def test_ratio_scaled_by_contacts(self):
        import results
        f = results.Figures(self.path)
        top = f.run.max_threads()
        text = "\n".join(results.workload_lines(f, markdown=True))
        self.assertIn("Workloads against uniform", text)
        for w, (slower, more) in self.COPIES.items():
            rows = [r.strip("| ").split(" | ") for r in text.splitlines()
                    if r.startswith(f"| grid_sorted | {w} |")]
            self.assertEqual(sorted(int(r[2]) for r in rows), [100000])
            for row in rows:
                c, h = (f.config("grid_sorted", x, int(row[2]), top) for x in (w, "uniform"))
                cw, ch = c.counters["contacts"], h.counters["contacts"]
                scale = max(1.0, cw / ch)
                ratio = stats.derived(lambda x, y: x / (y * scale), f.est(c), f.est(h))
                self.assertEqual(row[6], stats.text(ratio))
                self.assertAlmostEqual(ratio.value, slower / max(1.0, more), delta=1e-6)
                self.assertEqual(row[5], f"{cw / ch:.2f}")

    def test_no_rows_without_the_headline(self):
        import results
        f = results.Figures(self.path)
        for c in [c for c in f.run.configs.values() if c.workload == "uniform"]:
            c.rounds = []
        self.assertEqual(results.workload_lines(f, markdown=False), [])


def with_counters(data):
    """data's iteration entries given nsearch-bench's per-repetition counters, each
    from its own repetition's time (as the benchmark derives them): ns_per_particle,
    contacts_per_s, build_ms (a tenth of the time), query_ms (the rest),
    peak_rss_bytes (growing through the file), and the counts every repetition
    shares: index_bytes, contacts_per_particle."""
    rss = 1e8
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration" or b.get("error_occurred"):
            continue
        m = benchdata.NAME.match(b["run_name"])
        n, t = int(m["n"]), b["real_time"]
        rss += 4096
        b.update(ns_per_particle=t * 1e6 / n, contacts_per_s=b["contacts"] * 1e3 / t,
                 build_ms=0.1 * t, query_ms=0.9 * t, peak_rss_bytes=rss,
                 index_bytes=40 * n, contacts_per_particle=2 * b["contacts"] / n)
    return data


class Flatten(unittest.TestCase):
    """bench.tsv (results.py flatten): every figure of the repetitions (time, rates,
    phases, peak memory) is their median with its interval from the bootstrap, never
    the first repetition's; the rates follow from the median time; the counts every
    repetition shares are one value, and one that differs between them is named."""

    def setUp(self):
        self.data = with_counters(helpers.load_fixture("aa_a.json"))

    def rows(self, data):
        import results
        f = results.Figures(helpers.temp_fixture(self, data))
        text = results.flatten(f)
        header, *lines = [line.split("\t") for line in text.splitlines()]
        self.assertEqual(header, results.FLAT_COLUMNS)
        self.assertTrue(all(len(line) == len(header) for line in lines))
        return f, {tuple(r[:4]): dict(zip(header, r)) for r in lines}

    def test_figures_are_medians(self):
        f, rows = self.rows(self.data)
        g = lambda x: float(f"{x:.6g}")
        checked = 0
        for c in f.run.configs.values():
            row = rows[(c.kernel, c.workload, str(c.n), str(c.threads))]
            v, low, high = f.est(c).interval()
            self.assertEqual([float(row[k]) for k in ("median_ms", "low_ms", "high_ms")],
                             [g(v), g(low), g(high)])
            # the median time's, not the first repetition's (the old bench.tsv's)
            self.assertEqual(float(row["ns_per_particle"]), g(v * 1e6 / c.n), c.name)
            self.assertEqual([float(row["ns_per_particle" + s]) for s in ("_low", "_high")],
                             [g(x * 1e6 / c.n) for x in (low, high)], c.name)
            rate = c.counters["contacts"] * 1e3
            self.assertEqual(float(row["contacts_per_s"]), g(rate / v), c.name)
            self.assertEqual([float(row["contacts_per_s" + s]) for s in ("", "_low", "_high")],
                             [g(rate / x) for x in (v, high, low)], c.name)
            for counter in ("build_ms", "query_ms", "peak_rss_bytes"):
                e = f.counter_est(c, counter)
                self.assertEqual([float(row[counter + s]) for s in ("", "_low", "_high")],
                                 [g(x) for x in e.interval()], (c.name, counter))
                self.assertLessEqual(float(row[counter + "_low"]), float(row[counter]))
                self.assertLessEqual(float(row[counter]), float(row[counter + "_high"]))
            self.assertEqual(float(row["index_bytes"]), 40 * c.n)
            self.assertEqual(row["varying"], "")
            self.assertEqual(row["failed_repetitions"], "0")
            checked += 1
        self.assertEqual(checked, 17)

    def test_reference_row(self):
        """The reviewer's row of the Zen 4's committed run (the reference at commit
        3075a9a; a fixed file, so that refreshing the reference leaves this test):
        grid_sorted, uniform, 100,000, 1 thread, 13.54 ms [12.33, 16.53]; its first
        repetition took 17.53 ms (175.3 ns per particle), which the old table showed
        as ns_per_particle."""
        import results
        path = os.path.join(helpers.ROOT, "results", "machines",
                            "amd-epyc-family25-model17-avx512-2cpu", "bench.json")
        if not os.path.isfile(path):
            self.skipTest(f"no {path}")
        f = results.Figures(path)
        row = dict(zip(results.FLAT_COLUMNS, results.flat_row(
            f, f.config("grid_sorted", "uniform", 100000, 1))))
        self.assertAlmostEqual(row["median_ms"], 13.5424, places=3)
        self.assertAlmostEqual(row["ns_per_particle"], 135.424, places=2)
        self.assertAlmostEqual(row["ns_per_particle_low"], row["low_ms"] * 10, places=6)
        self.assertAlmostEqual(row["ns_per_particle_high"], row["high_ms"] * 10, places=6)
        self.assertAlmostEqual(row["contacts_per_s"], row["contacts"] * 1e3 / row["median_ms"])

    def test_shared_count_that_varies(self):
        c0 = next(b for b in self.data["benchmarks"]
                  if b["name"].startswith("grid_sorted/uniform/n:10000/threads:2/")
                  and b.get("run_type") == "iteration" and b["round"] == 2)
        c0["index_bytes"] = 123
        _, rows = self.rows(self.data)
        row = rows[("grid_sorted", "uniform", "10000", "2")]
        self.assertEqual(row["index_bytes"], str(40 * 10000))  # the first repetition's
        self.assertEqual(row["varying"], "index_bytes 123-400000 over 9 repetitions "
                                         "(shown: round 1's first, 400000)")

    def test_failed_repetitions(self):
        for b in self.data["benchmarks"]:
            if b["name"].startswith("grid_sorted/uniform/n:10000/threads:2/") and b["round"] == 3:
                b.update(error_occurred=True, error_message="refused: out of memory")
        _, rows = self.rows(self.data)
        row = rows[("grid_sorted", "uniform", "10000", "2")]
        self.assertEqual([row["rounds"], row["repetitions"], row["failed_repetitions"]],
                         ["2", "6", "3"])  # the round's aggregate is none


class Provenance(unittest.TestCase):
    """The summary's provenance (and compare.py's header) from every process's
    context, not the first's: OMP_WAIT_POLICY per thread count, load_average as
    the median over the processes with its interval, and a field the processes
    differ in named with each value and how many processes had it."""

    def setUp(self):
        data = helpers.load_fixture("aa_a.json")
        for k, ctx in enumerate(data["contexts"]):
            one = ctx["part"].endswith("-t1")
            ctx["OMP_WAIT_POLICY"] = "passive" if one else "active"
            ctx["load_average"] = f"{1 + 0.1 * k:.2f} 1.00 1.00"
            ctx["isa_path"] = "avx2" if k == 4 else "avx512"
        data["context"].update(OMP_WAIT_POLICY="passive", load_average="1.00 1.00 1.00",
                               isa_path="avx512")
        self.data = data
        self.path = helpers.temp_fixture(self, data)

    def test_every_process(self):
        import results
        run = benchdata.load(self.path)
        text = results.provenance(run)
        threads = [ctx["part"].rpartition("-t")[2] for ctx in run.contexts]
        one, two = threads.count("1"), threads.count("2")
        self.assertIn(f"OMP_WAIT_POLICY passive with 1 thread ({one} processes), active with "
                      f"2 threads ({two} processes)", text)
        self.assertIn(f"isa_path differs between the {len(run.contexts)} processes: avx512 "
                      f"({len(run.contexts) - 1} processes), avx2 (1 process)", text)
        rounds = {}
        for ctx in run.contexts:
            rounds.setdefault(ctx["round"], []).append(float(ctx["load_average"].split()[0]))
        e = stats.bootstrap([np.asarray(v) for _, v in sorted(rounds.items())],
                            rng=stats.generator("load_average"))
        loads = [x for v in rounds.values() for x in v]
        self.assertIn(f"load_average (1 min at each process's start: median over the "
                      f"{len(loads)} processes [95 % interval], range) {stats.text(e)}, "
                      f"{min(loads):.3g}-{max(loads):.3g}", text)
        self.assertIn("compiler GNU 12.2.0", text)
        summary = results.summary(results.Figures(self.path))
        self.assertIn(text, summary.splitlines()[1])

    def test_one_process(self):
        """A file of one process: its values as recorded."""
        import results
        ctx = dict(self.data["context"])
        text = results.provenance(benchdata.Run("x", ctx, [ctx], {}))
        self.assertIn("; OMP_WAIT_POLICY passive; ", text)
        self.assertIn("load_average 1.00 1.00 1.00", text)


class Aggregates(unittest.TestCase):
    """Google Benchmark's aggregates are no repetitions, in files without run_type
    (older Google Benchmark) too: known by aggregate_name or by their names'
    suffixes (_mean, _median, _stddev, _cv, _min, _max)."""

    def counts(self, data):
        run = benchdata.load(helpers.temp_fixture(self, data))
        return {k: [list(r) for r in c.rounds] for k, c in run.configs.items()}

    def test_without_run_type(self):
        data = helpers.load_fixture("aa_a.json")
        want = self.counts(data)
        self.assertTrue(all(len(r) == stats.DEFAULT_REPETITIONS
                            for rounds in want.values() for r in rounds))
        for b in data["benchmarks"]:
            del b["run_type"]
        self.assertEqual(self.counts(data), want)
        # nor an aggregate_name: the name's suffix tells
        extra = []
        for b in data["benchmarks"]:
            b.pop("aggregate_name", None)
            if b["name"].endswith("_median"):
                base = b["name"][:-len("_median")]
                extra += [dict(b, name=base + s, real_time=1e6)
                          for s in ("_mean", "_stddev", "_cv", "_min", "_max")]
        data["benchmarks"] += extra
        self.assertEqual(self.counts(data), want)

    def test_run_type_decides(self):
        """An entry that says it is an iteration is one, whatever its name."""
        entry = {"name": "naive/uniform/n:100/threads:1_mean", "run_type": "iteration",
                 "real_time": 2.0, "time_unit": "ms"}
        data = {"benchmarks": [entry, dict(entry, run_type="aggregate")]}
        self.assertEqual(self.counts(data), {("naive", "uniform", 100, 1): [[2.0]]})


class FewerRounds(unittest.TestCase):
    """A configuration timed in fewer rounds than the run (its other rounds failed):
    the summary marks every figure resting on it and lists it with the rounds it
    was timed in and the repetitions that failed."""

    NAME = "grid_sorted/uniform/n:100000/threads:2"

    def setUp(self):
        data = helpers.load_fixture("aa_a.json")
        for b in data["benchmarks"]:
            if b["name"].startswith(self.NAME + "/") and b["round"] > 1:
                b.update(error_occurred=True, error_message="refused: out of memory")
        self.path = helpers.temp_fixture(self, data)

    def test_marked_and_listed(self):
        import results
        f = results.Figures(self.path)
        c = f.config("grid_sorted", "uniform", 100000, 2)
        self.assertTrue(results.fewer_rounds(c, f.run) and results.one_process(c))
        text = results.summary(f, markdown=True)
        row = next(r for r in text.splitlines() if r.startswith("| grid_sorted | 2 |"))
        cells = [x.strip() for x in row.strip("|").split("|")]
        e = f.est(c)
        self.assertEqual(cells[3], stats.text(e) + "*")
        self.assertEqual(cells[4], stats.text(e, 1e6 / c.n) + "*")
        self.assertTrue(cells[5].endswith("*"), cells)  # the exponent rests on it too
        self.assertIn("## Timed in fewer rounds", text)
        self.assertIn("A figure marked * rests on a configuration timed in fewer rounds "
                      "than the run's 3", text)
        self.assertIn(f"- {self.NAME}: timed in 1 of 3 (round 1); 6 of 9 repetitions "
                      "failed (rounds 2, 3: refused: out of memory)", text)
        # the configurations timed in every round are not marked
        row = next(r for r in text.splitlines() if r.startswith("| grid_sorted | 1 |"))
        self.assertNotIn("*", row)

    def test_nothing_when_every_round_timed(self):
        import results
        text = results.summary(results.Figures(helpers.fixture("aa_a.json")))
        self.assertNotIn("fewer rounds", text)
        self.assertNotIn("*", text)


class Malformed(unittest.TestCase):
    """A malformed result file: FormatError, one line naming the file, the entry and
    the field; results.py (what run_all.sh --plots runs) says so in one line and
    exits 2, never with a traceback."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="stats-malformed-")
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.path = os.path.join(self.tmp, "bad.json")

    def write(self, content):
        with open(self.path, "wb") as f:
            f.write(content)

    def test_loader(self):
        for what, content, says in helpers.malformed():
            with self.subTest(what):
                self.write(content)
                with self.assertRaises(benchdata.FormatError) as caught:
                    benchdata.load(self.path)
                message = str(caught.exception)
                self.assertTrue(message.startswith(f"{self.path}: "), message)
                self.assertIn(says, message)
                self.assertNotIn("\n", message)
        missing = os.path.join(self.tmp, "missing.json")
        with self.assertRaisesRegex(benchdata.FormatError, f"^{missing}: cannot read: "):
            benchdata.load(missing)

    def test_results_script(self):
        out = os.path.join(self.tmp, "figures")
        for what, content, says in helpers.malformed():
            # every command reads the file through benchdata.load: plotdata (--plots)
            # for each malformation, summary and flatten for a few
            commands = [["plotdata", self.path, "--out", out]]
            if what in ("not UTF-8", "no real_time", "entry not an object"):
                commands += [["summary", self.path], ["flatten", self.path]]
            for args in commands:
                with self.subTest(what, command=args[0]):
                    self.write(content)
                    p = helpers.run_script(helpers.RESULTS, *args)
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
                    self.assertTrue(p.stderr.startswith(f"results.py: {self.path}: "), p.stderr)
                    self.assertIn(says, p.stderr)
                    self.assertEqual(p.stdout, "")


def refusal(test, change, source="aa_a.json"):
    """A result file (a fixture's name or a path) changed by change(data) in place:
    (its path, the one line of the FormatError benchdata.load raises on it)."""
    with open(source if os.path.isabs(source) else helpers.fixture(source)) as f:
        data = json.load(f)
    change(data)
    path = helpers.temp_fixture(test, data)
    with test.assertRaises(benchdata.FormatError) as caught:
        benchdata.load(path)
    message = str(caught.exception)
    test.assertNotIn("\n", message)
    return path, message


def entries(data, change, kind="iteration"):
    """change(entry) on each of data's entries of a run_type."""
    for b in data["benchmarks"]:
        if b.get("run_type") == kind:
            change(b)


class Committed(unittest.TestCase):
    """Every committed result file loads: the rules below refuse none of them (no
    committed repetition has a counter that is not a finite number, a time of 0,
    an n or threads of 0, or a repetition listed twice)."""

    def test_every_file_loads(self):
        found = glob.glob(os.path.join(helpers.ROOT, "results", "**", "bench.json"),
                          recursive=True)
        self.assertIn(os.path.join(helpers.ROOT, "results", "reference", "bench.json"), found)
        for path in glob.glob(os.path.join(helpers.ROOT, "tests", "**", "*.json"),
                              recursive=True):
            with open(path) as f:
                data = json.load(f)
            if isinstance(data, dict) and "benchmarks" in data:
                found.append(path)
        self.assertIn(helpers.fixture("aa_a.json"), found)
        for path in sorted(found):
            with self.subTest(os.path.relpath(path, helpers.ROOT)):
                self.assertTrue(benchdata.load(path).configs)


class Counters(unittest.TestCase):
    """Every field of a repetition is a finite number but Google Benchmark's text
    (name, run_name, run_type, time_unit, label, error_message, skip_message,
    aggregate_name, aggregate_unit, big_o), its flags (error_occurred, skipped)
    and the sweep's part."""

    def test_not_a_number(self):
        for key, value, says in (("contacts", "many", '"many", not a number'),
                                 ("index_bytes", "x", '"x", not a number'),
                                 ("build_ms", [1], "[1], not a number"),
                                 ("steal_ms", {}, "{}, not a number"),
                                 ("contacts", None, "null, not a number"),
                                 ("contacts", True, "true, not a number"),
                                 ("repetition_index", "0", '"0", not a number'),
                                 ("repetitions", False, "false, not a number")):
            with self.subTest(key=key, value=value):
                path, message = refusal(self, helpers.entry(key, value))
                self.assertEqual(message, f"{path}: {helpers.FIRST}: {key} is {says}")

    def test_not_finite(self):
        for value, shown in ((float("nan"), "NaN"), (float("inf"), "Infinity"),
                             (-float("inf"), "-Infinity"), (10 ** 400, "1" + "0" * 36 + "...")):
            with self.subTest(value=shown):
                path, message = refusal(self, helpers.entry("mem_probe_ms", value))
                self.assertEqual(message, f"{path}: {helpers.FIRST}: mem_probe_ms is {shown}, "
                                          "not a finite number")

    def test_every_repetition(self):
        """A failed repetition's fields too; not the aggregates' (not read)."""
        def failed(data):
            b = next(b for b in data["benchmarks"] if b.get("error_occurred"))
            b["cpu_time"] = "x"
        path, message = refusal(self, failed, "twox_b.json")
        data = helpers.load_fixture("twox_b.json")
        i, b = next((i, b) for i, b in enumerate(data["benchmarks"]) if b.get("error_occurred"))
        self.assertEqual(message, f'{path}: benchmarks[{i}] "{b["name"]}": cpu_time is "x", '
                                  "not a number")
        data = helpers.load_fixture("aa_a.json")
        entries(data, lambda b: b.update(contacts="many", steal_ms=float("nan")), "aggregate")
        self.assertEqual(len(benchdata.load(helpers.temp_fixture(self, data)).configs), 17)

    def test_text_and_flags(self):
        """Google Benchmark's own text and flags are no numbers; of the wrong type
        they are refused."""
        data = helpers.load_fixture("aa_a.json")
        entries(data, lambda b: b.update(skipped=False, skip_message="", aggregate_unit="time",
                                         big_o="N", cpu_time=0.5, iterations=10))
        self.assertEqual(len(benchdata.load(helpers.temp_fixture(self, data)).configs), 17)
        for key, value, says in (("skipped", "no", '"no", not true or false'),
                                 ("skip_message", 1, "1, not a string"),
                                 ("aggregate_unit", [], "[], not a string")):
            with self.subTest(key=key):
                path, message = refusal(self, helpers.entry(key, value))
                self.assertEqual(message, f"{path}: {helpers.FIRST}: {key} is {says}")


def renamed(new):
    """A change renaming benchmarks[0] of aa_a.json from n:1000/threads:1 to new."""
    def change(data):
        for key in ("name", "run_name"):
            data["benchmarks"][0][key] = data["benchmarks"][0][key].replace(
                "n:1000/threads:1", new)
    return change


class Names(unittest.TestCase):
    """The n and threads of a configuration's name are whole numbers from 1 to
    2^63 - 1 (none of 0, nor so large that a figure cannot divide by it)."""

    def test_refused(self):
        top = 2 ** 63 - 1
        for new, field, says in (("n:0/threads:1", "n", "0"),
                                 ("n:1000/threads:0", "threads", "0"),
                                 ("n:000/threads:1", "n", "000"),
                                 (f"n:{top + 1}/threads:1", "n", str(top + 1)),
                                 (f"n:1000/threads:{'9' * 30}", "threads", "9" * 17 + "..."),
                                 (f"n:{'9' * 5000}/threads:1", "n", "9" * 17 + "...")):
            with self.subTest(new[:30]):
                path, message = refusal(self, renamed(new))
                name = f"naive/uniform/{new}/manual_time"
                self.assertEqual(message, f'{path}: benchmarks[0] "{name}": run_name\'s {field} '
                                          f"is {says}, not a whole number from 1 to {top}")

    def test_name_without_run_name(self):
        def change(data):
            renamed("n:1000/threads:0")(data)
            del data["benchmarks"][0]["run_name"]
        path, message = refusal(self, change)
        self.assertEqual(message, f'{path}: benchmarks[0] "naive/uniform/n:1000/threads:0/'
                                  f"manual_time\": name's threads is 0, not a whole number "
                                  f"from 1 to {2 ** 63 - 1}")

    def test_largest(self):
        top = 2 ** 63 - 1
        data = helpers.load_fixture("aa_a.json")
        renamed(f"n:{top}/threads:0{top}")(data)
        run = benchdata.load(helpers.temp_fixture(self, data))
        self.assertIn(("naive", "uniform", top, top), run.configs)


class Repetitions(unittest.TestCase):
    """A repetition listed twice (the same configuration, round, part and
    repetition_index; without repetition_index, an entry the same as an earlier
    one) is refused, naming both entries: kept, it would count twice and narrow
    the intervals below what was measured."""

    NAME = helpers.FIRST[len("benchmarks[0] "):]  # aa_a.json's first entry's, quoted

    def test_file_twice(self):
        """The reported file: its benchmarks listed twice."""
        n = len(helpers.load_fixture("aa_a.json")["benchmarks"])
        path, message = refusal(self, lambda d: d.update(benchmarks=d["benchmarks"] * 2))
        self.assertEqual(message, f"{path}: benchmarks[{n}] {self.NAME}: repetition_index 0 of "
                                  "the same round 1, part r1-g001-t1 as benchmarks[0]: a "
                                  "repetition listed twice")

    def test_one_repetition_twice(self):
        """Whatever its time: the same repetition, timed twice, is one too many."""
        def change(data):
            data["benchmarks"].insert(5, dict(data["benchmarks"][1], real_time=1.0))
        path, message = refusal(self, change)
        self.assertEqual(message, f"{path}: benchmarks[5] {self.NAME}: repetition_index 1 of "
                                  "the same round 1, part r1-g001-t1 as benchmarks[1]: a "
                                  "repetition listed twice")

    def test_one_process_file(self):
        """A file without rounds or parts (tests/plots/a.json): every entry is round 1's."""
        source = os.path.join(helpers.ROOT, "tests", "plots", "a.json")
        with open(source) as f:
            benchmarks = json.load(f)["benchmarks"]
        path, message = refusal(self, lambda d: d["benchmarks"].append(benchmarks[0]), source)
        self.assertEqual(message, f'{path}: benchmarks[{len(benchmarks)}] '
                                  f'"{benchmarks[0]["name"]}": repetition_index 0 of the same '
                                  "round 1 as benchmarks[0]: a repetition listed twice")

    def test_without_repetition_index(self):
        """Older Google Benchmark: only an entry the same as an earlier one."""
        data = helpers.load_fixture("aa_a.json")
        entries(data, lambda b: b.pop("repetition_index"))
        want = benchdata.load(helpers.temp_fixture(self, data)).configs[
            ("naive", "uniform", 1000, 1)].repetitions
        self.assertEqual(want, stats.DEFAULT_ROUNDS * stats.DEFAULT_REPETITIONS)
        data["benchmarks"].append(dict(data["benchmarks"][2]))
        path = helpers.temp_fixture(self, data)
        with self.assertRaises(benchdata.FormatError) as caught:
            benchdata.load(path)
        self.assertEqual(str(caught.exception),
                         f"{path}: benchmarks[{len(data['benchmarks']) - 1}] {self.NAME}: "
                         "the same entry as benchmarks[2]: a repetition listed twice")

    def test_failed_repetition_twice(self):
        data = helpers.load_fixture("twox_b.json")
        i, b = next((i, b) for i, b in enumerate(data["benchmarks"]) if b.get("error_occurred"))
        path, message = refusal(self, lambda d: d["benchmarks"].append(b), "twox_b.json")
        self.assertEqual(message, f'{path}: benchmarks[{len(data["benchmarks"])}] "{b["name"]}": '
                                  f"repetition_index 0 of the same round {b['round']}, part "
                                  f"{b['part']} as benchmarks[{i}]: a repetition listed twice")

    def test_other_rounds_and_parts(self):
        """The same repetition_index in another round, or another configuration of the
        same part, is another repetition."""
        run = benchdata.load(helpers.fixture("aa_a.json"))
        c = run.configs[("grid_sorted", "uniform", 10000, 2)]
        self.assertEqual([len(r) for r in c.rounds], [stats.DEFAULT_REPETITIONS] * 3)


class Contexts(unittest.TestCase):
    """What the tools read from the contexts as recorded: each process's round and
    part (null is refused there, not taken for absent), the machine's label's
    fields (text)."""

    def test_round_and_part_not_null(self):
        for key, what in (("round", "a whole number"), ("part", "a string")):
            with self.subTest(key):
                path, message = refusal(self, lambda d: d["contexts"][2].update({key: None}))
                self.assertEqual(message, f"{path}: contexts[2]: {key} is null, not {what}")

    def test_machine_label_text(self):
        for key in benchdata.MACHINE_TEXT:
            with self.subTest(key):
                path, message = refusal(self, lambda d: d["context"].update({key: ["x"]}))
                self.assertEqual(message, f'{path}: context: {key} is ["x"], not a string')


class Times(unittest.TestCase):
    """A repetition's time, in ms after its time_unit, is finite and above 0: no
    search takes no time, and the summary divides by the times."""

    def test_refused(self):
        for value, unit in ((0, "ms"), (0.0, "ns"), (-0.0, "ms"), (1e-320, "ns"), (1e308, "s")):
            with self.subTest(value=value, unit=unit):
                path, message = refusal(self, lambda d: entries(
                    d, lambda b: b.update(real_time=value, time_unit=unit)))
                self.assertEqual(message, f"{path}: {helpers.FIRST}: real_time is "
                                          f"{json.dumps(value)} {unit}, not a finite time "
                                          "above 0 in ms")

    def test_results_script(self):
        """Every time 0: refused before the summary divides by one."""
        data = helpers.load_fixture("aa_a.json")
        entries(data, lambda b: b.update(real_time=0))
        path = helpers.temp_fixture(self, data)
        p = helpers.run_script(helpers.RESULTS, "summary", path)
        self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
        self.assertEqual(p.stderr, f"results.py: {path}: {helpers.FIRST}: real_time is 0 ms, "
                                   "not a finite time above 0 in ms\n")


class Reported(unittest.TestCase):
    """The fault-injection report's files (a counter that is text or a list, n:0,
    threads:0, the repetitions listed twice) through what ./run_all.sh --plots
    runs (results.py plotdata, summary, flatten): one line naming the file, the
    entry and the field, exit 2."""

    def cases(self):
        """(what, change, the error's line after the file)."""
        top = 2 ** 63 - 1
        twice = f"benchmarks[{len(helpers.load_fixture('aa_a.json')['benchmarks'])}]"
        return [
            ("contacts a string", helpers.entry("contacts", "many"),
             f'{helpers.FIRST}: contacts is "many", not a number'),
            ("index_bytes a string", helpers.entry("index_bytes", "x"),
             f'{helpers.FIRST}: index_bytes is "x", not a number'),
            ("build_ms a list", helpers.entry("build_ms", [1]),
             f"{helpers.FIRST}: build_ms is [1], not a number"),
            ("n:0", renamed("n:0/threads:1"),
             'benchmarks[0] "naive/uniform/n:0/threads:1/manual_time": run_name\'s n is 0, '
             f"not a whole number from 1 to {top}"),
            ("threads:0", renamed("n:1000/threads:0"),
             'benchmarks[0] "naive/uniform/n:1000/threads:0/manual_time": run_name\'s '
             f"threads is 0, not a whole number from 1 to {top}"),
            ("listed twice", lambda d: d.update(benchmarks=d["benchmarks"] * 2),
             f"{twice} {Repetitions.NAME}: repetition_index 0 of the same round 1, part "
             "r1-g001-t1 as benchmarks[0]: a repetition listed twice"),
        ]

    def test_results_script(self):
        out = tempfile.mkdtemp(prefix="stats-reported-")
        self.addCleanup(shutil.rmtree, out, ignore_errors=True)
        runs = []
        for k, (what, change, says) in enumerate(self.cases()):
            data = helpers.load_fixture("aa_a.json")
            change(data)
            path = helpers.temp_fixture(self, data)
            # each through plotdata, by turns through summary or flatten too
            for args in (["plotdata", path, "--out", out], [("summary", "flatten")[k % 2], path]):
                runs.append((what, args, f"results.py: {path}: {says}\n"))
        with concurrent.futures.ThreadPoolExecutor(2) as pool:  # two at a time: quicker
            done = pool.map(lambda run: helpers.run_script(helpers.RESULTS, *run[1]), runs)
            for (what, args, says), p in zip(runs, done):
                with self.subTest(what, command=args[0]):
                    self.assertEqual((p.returncode, p.stdout), (2, ""), p.stderr)
                    self.assertEqual(p.stderr, says)


# Runs harness scripts one after another in one process, as their command lines
# would (as __main__, sys.argv set), so that numpy and scipy load once and each
# script compiles once: argv[1] harness/, argv[2] a JSON file of a list of
# [script, args]; stdout a JSON list of [exit status, output], the output
# holding the traceback of any exception that escaped the script, or that the
# script caught as a defect (NS_DEBUG: program.run's "internal error" prints
# its traceback too).
SCRIPTS = r"""
import contextlib, io, json, os, sys, traceback
sys.path.insert(0, sys.argv[1])
os.environ["NS_DEBUG"] = "1"
with open(sys.argv[2]) as f:
    commands = json.load(f)
compiled, done = {}, []
for script, args in commands:
    if script not in compiled:
        with open(script) as f:
            compiled[script] = compile(f.read(), script, "exec")
    out = io.StringIO()
    sys.argv = [script] + args
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            exec(compiled[script], {"__name__": "__main__", "__file__": script})
            status = 0
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else int(e.code is not None)
        except BaseException:
            traceback.print_exc()
            status = 1
    done.append([status, out.getvalue()])
json.dump(done, sys.stdout)
"""


def run_scripts(test, commands, processes=2):
    """[(exit status, output)] of each [script, args] of commands, run by SCRIPTS in
    `processes` processes side by side."""
    procs = []
    for k in range(processes):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(commands[k::processes], f)
        test.addCleanup(os.remove, f.name)
        procs.append(subprocess.Popen([sys.executable, "-c", SCRIPTS, helpers.HARNESS, f.name],
                                      stdout=subprocess.PIPE, text=True))
    out = [None] * len(commands)
    for k, p in enumerate(procs):
        out[k::processes] = json.loads(p.communicate(timeout=300)[0])
    return out


def fuzz_base():
    """A small run as nsearch-bench writes one today, from aa_a.json: Google
    Benchmark's fields and the per-repetition counters on every repetition (the
    memory probe on grid_sorted's), the library's tables with a peer (libx,
    grid_sorted's dambreak renamed), each process's load and threads, and a
    configuration that failed in one round (naive's dambreak); naive and
    grid_sorted at n = 1,000 and 10,000 on uniform."""
    data = with_counters(helpers.load_fixture("aa_a.json"))
    keep = ("naive/uniform/n:1000/", "naive/uniform/n:10000/", "grid_sorted/uniform/n:1000/",
            "grid_sorted/uniform/n:10000/", "naive/dambreak/", "grid_sorted/dambreak/")
    data["benchmarks"] = [b for b in data["benchmarks"] if b["name"].startswith(keep)]
    parts = {b["part"] for b in data["benchmarks"]}
    data["contexts"] = [ctx for ctx in data["contexts"] if ctx["part"] in parts]
    kernels = [{"name": "naive", "reference": 1},
               {"name": "hash_parallel", "parallel": True, "uses_table_size": True},
               {"name": "grid_sorted", "parallel": True, "bound": True}]
    data["context"].update(
        kernel_table=json.dumps(kernels), peers_missing="liby (liby-dev)",
        workload_table=json.dumps([{"name": "uniform", "headline": True}, {"name": "dambreak"}]),
        peer_table=json.dumps([{"name": "libx", "library": "libx 1.0", "tuning": "defaults"}]),
        cpu_signature="family 25 model 1 stepping 1", isa="cpu: avx2 yes")
    for ctx in [data["context"]] + data["contexts"]:
        ctx.update(load_average="1.00 1.00 1.00", OMP_NUM_THREADS="1", isa_path="avx2")
    for b in data["benchmarks"]:
        b.update(family_index=0, iterations=10, threads=1, cpu_time=b["real_time"])
        for key in ("name", "run_name"):
            b[key] = b[key].replace("grid_sorted/dambreak/", "libx/dambreak/")
        if b["run_type"] == "iteration":
            b.update(steal_ms=0.0, invol_csw=3.0, vol_csw=1.0, table_size=64.0)
            if b["name"].startswith("grid_sorted/"):
                b.update(mem_probe_ms=1.0)
        if b["name"].startswith("naive/dambreak/") and b["round"] == 3:
            b.update(error_occurred=True, error_message="refused: out of memory")
    return data


class NoTraceback(unittest.TestCase):
    """Result files that parse but hold other JSON where a field was (a string, a
    list, an object, null, a bool, a negative number, 0, a huge number), in each
    field of each kind of entry (the context, the processes' contexts, the timed
    repetitions, a failed one, an aggregate): results.py (summary as text or as
    Markdown by turns, flatten, plotdata), compare.py (the file as A or as B) and
    sim_results.py (sim_run.json) end with a status of 0, 1 or 2 and no
    traceback; where the loader refuses the file, its error is one line naming the
    file. A deterministic sample: every value in every field of every timed
    repetition (what the figures are made of), one or two values in turn in each
    other field, and what lies inside fields (the tables' JSON, a name's n and
    threads, a repetition listed twice)."""

    VALUES = ["x", [1], {"a": 1}, None, True, -1, 0, 1e308, 10 ** 400]

    def plan(self, data):
        """(kind, pick, values per field): pick(data) gives the entries to change."""
        timed = lambda b: b["run_type"] == "iteration" and not b.get("error_occurred")

        def first(kind, test):
            i = next(i for i, b in enumerate(data["benchmarks"]) if test(b))
            return f"benchmarks[{i}] ({kind})", lambda d: [d["benchmarks"][i]]
        return [("context", lambda d: [d["context"]], 2),
                ("contexts[1]", lambda d: [d["contexts"][1]], 1),
                ("every context", lambda d: d["contexts"], 1),
                (*first("a repetition", timed), 2),
                ("every timed repetition",
                 lambda d: [b for b in d["benchmarks"] if timed(b)], len(self.VALUES)),
                (*first("failed", lambda b: b.get("error_occurred")), 2),
                (*first("aggregate", lambda b: b["run_type"] == "aggregate"), 1)]

    def inside(self):
        """(what, change) of what lies inside fields."""
        def context(key, value):
            return lambda d: d["context"].update({key: value})
        return [("kernel_table [1]", context("kernel_table", "[1]")),
                ("kernel_table [{}]", context("kernel_table", "[{}]")),
                ("workload_table [null]", context("workload_table", "[null]")),
                ("peer_table without library", context("peer_table", '[{"name": "libx"}]')),
                ("n:0", renamed("n:0/threads:1")), ("threads:0", renamed("n:1000/threads:0")),
                ("n:10^30", renamed(f"n:{10 ** 30}/threads:1")),
                ("benchmarks twice", lambda d: d.update(benchmarks=d["benchmarks"] * 2)),
                ("contexts[1] round null", lambda d: d["contexts"][1].update(round=None)),
                ("cpu_signature a list", context("cpu_signature", ["x"]))]

    def mutations(self, data):
        """(what, mutated data): for each kind and each field of its entries (in
        order), the plan's count of VALUES, taking up where the previous field
        stopped; then inside()."""
        turn = 0
        for kind, pick, count in self.plan(data):
            for key in sorted(pick(data)[0]):
                for _ in range(count):
                    value = self.VALUES[turn % len(self.VALUES)]
                    turn += 1
                    mutated = json.loads(json.dumps(data))
                    for entry in pick(mutated):
                        entry[key] = value
                    yield f"{kind}: {key} = {benchdata.shown(value)}", mutated
        for key, value in (("context", "x"), ("contexts", {}), ("benchmarks", [1])):
            yield f"{key} = {benchdata.shown(value)}", dict(data, **{key: value})
        for what, change in self.inside():
            mutated = json.loads(json.dumps(data))
            change(mutated)
            yield what, mutated

    def test_results_and_compare(self):
        tmp = tempfile.mkdtemp(prefix="stats-notraceback-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        base = os.path.join(tmp, "base.json")
        data = fuzz_base()
        with open(base, "w") as f:
            json.dump(data, f)
        jobs, commands = [], []
        for k, (what, mutated) in enumerate(self.mutations(data)):
            path, out = os.path.join(tmp, f"m{k}.json"), os.path.join(tmp, f"out{k}")
            with open(path, "w") as f:
                json.dump(mutated, f)
            # by turns: the summary as text or Markdown, the file as A or as B
            side = k // 2 % 2
            run = [("results.py summary" + " --markdown" * (k % 2),
                    [helpers.RESULTS, ["summary", path] + ["--markdown"] * (k % 2)]),
                   (f"compare.py, as {'AB'[side]}",
                    [helpers.COMPARE, ([path, base], [base, path])[side]
                     + ["--out", out, "--replicates", "100", "--allow-different-builds"]]),
                   ("results.py flatten", [helpers.RESULTS, ["flatten", path]]),
                   ("results.py plotdata", [helpers.RESULTS, ["plotdata", path, "--out", out]])]
            try:
                benchdata.load(path)
            except benchdata.FormatError as e:
                # refused: every command stops there, so one of them, by turns
                with self.subTest(what):
                    self.assertTrue(str(e).startswith(f"{path}: "), str(e))
                    self.assertNotIn("\n", str(e))
                run = [run[k % len(run)]]
            jobs += [f"{what}: {name}" for name, _ in run]
            commands += [command for _, command in run]
        self.check(jobs, run_scripts(self, commands))

    def test_sim_results(self):
        tmp = tempfile.mkdtemp(prefix="stats-notraceback-sim-")
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        record = {"date": "2026-01-02T03:04:05Z", "commit": "abc123", "tool": "nsearch 9.9",
                  "cpu": "Synthetic CPU", "threads": 2, "host": "alpha",
                  "load_average": [1.0, 1.0, 1.0]}
        script = os.path.join(helpers.HARNESS, "sim_results.py")
        jobs, commands = [], []
        # three values in turn in each field, then every value in place of the record
        changes = []
        for j, key in enumerate(sorted(record)):
            for k in range(3 * j, 3 * j + 3):
                value = self.VALUES[k % len(self.VALUES)]
                changes.append((f"{key} = {benchdata.shown(value)}",
                                dict(record, **{key: value})))
        changes += [(benchdata.shown(value), value) for value in self.VALUES]
        for k, (what, run) in enumerate(changes):
            folder = os.path.join(tmp, str(k))
            os.makedirs(folder)
            shutil.copy(os.path.join(helpers.ROOT, "tests", "plots", "sim", "sim.tsv"), folder)
            with open(os.path.join(folder, "sim_run.json"), "w") as f:
                json.dump(run, f)
            tsv = os.path.join(folder, "sim.tsv")
            for args in (["summary", tsv], ["data", tsv, "--out", os.path.join(folder, "d")]):
                jobs.append(f"sim_run.json {what}: sim_results.py {args[0]}")
                commands.append([script, args])
        self.check(jobs, run_scripts(self, commands))

    def check(self, jobs, done):
        self.assertEqual(len(done), len(jobs))
        for job, (status, output) in zip(jobs, done):
            with self.subTest(job):
                self.assertNotIn("Traceback", output)
                self.assertNotIn("internal error", output)
                self.assertIn(status, (0, 1, 2), output)


if __name__ == "__main__":
    unittest.main()
