#!/usr/bin/env python3
"""Counts the test cases of GoogleTest XML reports (Bazel's test.xml files).

  tools/test_counts.py [--failed-target LABEL ...] TEST_XML ...

Prints one line per test case that failed or was skipped (with the skip reason), then
"N passed, N failed, N skipped". A target Bazel reported as failed whose XML names no
failed case (a crash, a timeout) counts as one failure of its own.
"""
import sys
import xml.etree.ElementTree as ET


def main(argv):
    failed_targets, paths = [], []
    args = iter(argv)
    for arg in args:
        if arg == "--failed-target":
            failed_targets.append(next(args))
        else:
            paths.append(arg)

    passed = failed = skipped = 0
    lines = []
    failed_in_xml = set()
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            lines.append(f"FAILED  {path}: unreadable report ({e})")
            failed += 1
            failed_in_xml.add(path)
            continue
        for case in root.iter("testcase"):
            name = f"{case.get('classname', '')}.{case.get('name', '')}"
            skip = case.find("skipped")
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                failed_in_xml.add(path)
                lines.append(f"FAILED  {name}")
            elif skip is not None or case.get("result") == "skipped":
                skipped += 1
                reason = (skip.get("message", "") if skip is not None else "").strip()
                lines.append(f"SKIPPED {name}: {reason.splitlines()[-1] if reason else ''}")
            elif case.get("status", "run") == "run":
                passed += 1
    for label in failed_targets:
        path = label.lstrip("/").replace(":", "/") + "/test.xml"
        if not any(p.endswith(path) for p in failed_in_xml):
            failed += 1
            lines.append(f"FAILED  {label}: the target failed (crash or timeout)")
    for line in sorted(lines):
        print(line)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")


if __name__ == "__main__":
    main(sys.argv[1:])
