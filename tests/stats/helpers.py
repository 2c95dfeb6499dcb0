"""Shared by the stats tests: the repository's paths, harness/ on sys.path,
compare.py run as a command, and malformed result files."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HARNESS = os.path.join(ROOT, "harness")
COMPARE = os.path.join(HARNESS, "compare.py")
RESULTS = os.path.join(HARNESS, "results.py")
sys.path.insert(0, HARNESS)


def fixture(name):
    """A synthetic result file of tests/stats/ (make_fixtures.py)."""
    return os.path.join(HERE, name)


def load_fixture(name):
    """A synthetic result file's JSON, to alter and write back with temp_fixture."""
    with open(fixture(name)) as f:
        return json.load(f)


def temp_fixture(test, data):
    """data written to a temporary .json file, removed when test ends: its path."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(data, f)
    test.addCleanup(os.remove, f.name)
    return f.name


def run_script(script, *args):
    """A harness script with args, by this interpreter: CompletedProcess, text captured."""
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                          timeout=120)


def run_compare(*args):
    """compare.py with args, by this interpreter: CompletedProcess, text captured."""
    return run_script(COMPARE, *args)


def edit(change):
    """aa_a.json changed by change(data) in place: its new bytes."""
    data = load_fixture("aa_a.json")
    change(data)
    return json.dumps(data).encode()


def entry(key, value=None, index=0):
    """A change setting benchmarks[index][key] to value, or deleting it when value
    is ...; benchmarks[0] is an iteration entry of naive."""
    def change(data):
        if value is ...:
            del data["benchmarks"][index][key]
        else:
            data["benchmarks"][index][key] = value
    return change


FIRST = 'benchmarks[0] "naive/uniform/n:1000/threads:1/manual_time"'


def malformed():
    """Malformed result files: [(what, the file's bytes, what the one line of the
    error says besides the file)]. Each gave a traceback from benchdata.load before
    it checked the fields it reads."""
    return [
        ("not UTF-8", b"\xff{", "not UTF-8 text"),
        ("not JSON", b"{not json", "not JSON"),
        ("nested too deeply", b"[" * 100000, "not JSON"),
        ("no real_time", edit(entry("real_time", ...)), f"{FIRST}: real_time is missing"),
        ("real_time null", edit(entry("real_time", None)), f"{FIRST}: real_time is null"),
        ("real_time a string", edit(entry("real_time", "1.5")), f'{FIRST}: real_time is "1.5"'),
        ("real_time true", edit(entry("real_time", True)), f"{FIRST}: real_time is true"),
        ("real_time negative", edit(entry("real_time", -1)), f"{FIRST}: real_time is -1"),
        ("real_time huge", edit(entry("real_time", 10 ** 400)), f"{FIRST}: real_time is 1000"),
        ("round not a number", edit(entry("round", "x")), f'{FIRST}: round is "x"'),
        ("round 0", edit(entry("round", 0)), f"{FIRST}: round is 0"),
        ("part a list", edit(entry("part", [1])), f"{FIRST}: part is [1]"),
        ("unknown unit", edit(entry("time_unit", "h")), f'{FIRST}: time_unit is "h"'),
        ("label a number", edit(entry("label", 1)), f"{FIRST}: label is 1"),
        ("error_occurred a string", edit(entry("error_occurred", "yes")),
         f'{FIRST}: error_occurred is "yes"'),
        ("name a number", edit(entry("name", 7)), "benchmarks[0]: name is 7"),
        ("run_name a list", edit(entry("run_name", [])), f"{FIRST}: run_name is []"),
        ("run_type a number", edit(entry("run_type", 2)), f"{FIRST}: run_type is 2"),
        ("entry not an object", edit(lambda d: d["benchmarks"].insert(3, 3)),
         "benchmarks[3] is 3, not an object"),
        ("context a string", edit(lambda d: d.update(context="x")),
         'context is "x", not an object'),
        ("context empty text", edit(lambda d: d.update(context="")),
         'context is "", not an object'),
        ("contexts an object", edit(lambda d: d.update(contexts={})),
         "contexts is {}, not a list"),
        ("a context not an object", edit(lambda d: d["contexts"].insert(1, "x")),
         'contexts[1] is "x", not an object'),
        ("a context's round", edit(lambda d: d["contexts"][2].update(round="2")),
         'contexts[2]: round is "2"'),
    ]

def read_tsv(path):
    with open(path) as f:
        header, *rows = [line.rstrip("\n").split("\t") for line in f]
    return [dict(zip(header, r)) for r in rows]
