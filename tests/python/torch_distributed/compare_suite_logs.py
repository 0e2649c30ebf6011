#!/usr/bin/python3
"""Compares runs of distributed_test_driver.py -v (one log per backend): counts per backend and
every test that passes with the reference backend but not with the others, with the reason.

    compare_suite_logs.py gloo2.log riseml2.log     (the first log is the reference)
"""
import re
import sys

TEST = re.compile(r"^(test_\w+) \(__main__\.\w+\.\w+\)")
RESULT = re.compile(r"^(ok|ERROR|FAIL|skipped ['\"](.*)['\"]|expected failure|unexpected success)\s*$")
INLINE = re.compile(r"\.\.\. (ok|ERROR|FAIL|skipped ['\"](.*)['\"])\s*$")
REASON = re.compile(r"^(\w*Error: .*|AssertionError.*|.*does not support.*)$")


def read(path):
    """{test: (status, reason)} from one -v log."""
    results, current = {}, None
    lines = open(path, errors="replace").read().splitlines()
    for line in lines:
        m = TEST.match(line)
        if m:
            current = m.group(1)
            r = INLINE.search(line[m.end():])
            if r:
                results[current] = (r.group(1).split(" ")[0], r.group(2) or "")
                current = None
            continue
        m = RESULT.match(line) or (INLINE.search(line) if current else None)
        if m and current:
            results[current] = (m.group(1).split(" ")[0], m.group(2) or "")
            current = None
    # The reason of each error: the last exception line in its traceback block.
    text = "\n".join(lines)
    for block in re.split(r"\n={50,}\n", text):
        head = re.match(r"(ERROR|FAIL): (test_\w+)", block)
        if head and head.group(2) in results:
            reasons = [l.strip() for l in block.splitlines() if REASON.match(l.strip())]
            results[head.group(2)] = (head.group(1), reasons[-1][:200] if reasons else "")
    return results


def main(paths):
    runs = [(p, read(p)) for p in paths]
    for path, res in runs:
        counts = {}
        for status, _ in res.values():
            counts[status] = counts.get(status, 0) + 1
        print("%s: %d tests: %s" % (path, len(res), ", ".join(
            "%s %d" % (k, v) for k, v in sorted(counts.items()))))
    ref_path, ref = runs[0]
    for path, res in runs[1:]:
        print("\npassed with %s, not with %s:" % (ref_path, path))
        missing = 0
        for test in sorted(ref):
            if ref[test][0] == "ok" and res.get(test, ("absent", ""))[0] != "ok":
                missing += 1
                status, reason = res.get(test, ("absent", ""))
                print("  %s: %s %s" % (test, status, reason))
        if not missing:
            print("  none")
        extra = [t for t in sorted(res) if res[t][0] == "ok" and ref.get(t, ("", ""))[0] != "ok"]
        print("passed with %s only: %d%s" % (path, len(extra),
                                              (" (" + ", ".join(extra) + ")") if extra else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
