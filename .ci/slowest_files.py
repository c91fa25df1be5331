"""Prints the test files that took the most time in a pytest JUnit XML report.

Usage: python .ci/slowest_files.py REPORT.xml [COUNT]. pytest's --durations
names the slowest tests; this sums each file's tests (setup, call and
teardown, over every worker), which is where a CI step's time goes when
many quick tests add up.
"""

import collections
import sys
import xml.etree.ElementTree as ElementTree


def main() -> None:
    path, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 10
    seconds = collections.Counter()
    tests = collections.Counter()
    for case in ElementTree.parse(path).iter("testcase"):
        parts = case.get("classname", "").split(".")
        if len(parts) > 1 and parts[-1][:1].isupper():  # a test class's methods
            parts = parts[:-1]
        name = "/".join(parts) + ".py"
        seconds[name] += float(case.get("time", 0.0))
        tests[name] += 1
    total = sum(seconds.values())
    print(f"{total:.0f} s of test time over all workers; the {count} costliest files:")
    for name, spent in seconds.most_common(count):
        print(f"{spent:8.1f} s {tests[name]:5d} tests  {name}")


if __name__ == "__main__":
    main()
