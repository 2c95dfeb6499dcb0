#!/usr/bin/env python3
"""Prints the test classes of tests/stats/test_*.py, one `SCRIPT CLASS` a line:
every class that defines a method named test_*. tests/CMakeLists.txt registers
one ctest per line, so a new class runs without being listed anywhere else.
Reads the sources only (ast), so it needs neither numpy nor scipy.

    list_cases.py DIR
"""
import ast
import os
import sys


def cases(path):
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
                isinstance(m, ast.FunctionDef) and m.name.startswith("test_") for m in node.body):
            yield node.name


def main(folder):
    for name in sorted(os.listdir(folder)):
        if name.startswith("test_") and name.endswith(".py"):
            for cls in cases(os.path.join(folder, name)):
                print(name[:-3], cls)


if __name__ == "__main__":
    main(sys.argv[1])
