#!/usr/bin/env python3
"""harness/benchdata.py: the sweep's merged files with rounds, and today's files
without them (tests/plots/*.json).

    test_benchdata.py [Loader | Tables | Peers | OneShot | MemoryProbe
                       | WorkloadsAgainstHeadline | Flatten | Provenance | Aggregates
                       | FewerRounds | Malformed]
"""
import json
import os
import shutil
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


if __name__ == "__main__":
    unittest.main()
