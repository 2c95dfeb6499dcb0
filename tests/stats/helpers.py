"""Shared by the stats tests: the repository's paths, harness/ on sys.path, and
compare.py run as a command."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HARNESS = os.path.join(ROOT, "harness")
COMPARE = os.path.join(HARNESS, "compare.py")
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


def run_compare(*args):
    """compare.py with args, by this interpreter: CompletedProcess, text captured."""
    return subprocess.run([sys.executable, COMPARE, *args], capture_output=True, text=True,
                          timeout=120)


def read_tsv(path):
    with open(path) as f:
        header, *rows = [line.rstrip("\n").split("\t") for line in f]
    return [dict(zip(header, r)) for r in rows]
