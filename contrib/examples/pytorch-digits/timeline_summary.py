#!/usr/bin/env python3
"""Sums a riseml timeline (RISEML_TIMELINE=file.json, written by rank 0) by phase.

    timeline_summary.py timeline.json [wall_seconds]

Each phase's share is of `wall_seconds`, or else of the span from the first event to the last. NEGOTIATE and QUEUE
are waiting (they overlap the backward pass); the collective and MEMCPY phases are the engine
thread's work.
"""
import collections
import json
import sys


def main():
    with open(sys.argv[1]) as f:
        events = json.load(f)
    wall = float(sys.argv[2]) if len(sys.argv) > 2 else None
    spans = [(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X"]
    if wall is None and spans:
        wall = (max(end for _, end in spans) - min(start for start, _ in spans)) / 1e6
    total = collections.Counter()
    count = collections.Counter()
    seen = set()
    for e in events:
        # A fused collective appears once per tensor with the same interval: count it once.
        key = (e.get("name"), e.get("ts"), e.get("dur"))
        if e.get("ph") == "X" and (e["name"] in ("NEGOTIATE", "QUEUE") or key not in seen):
            seen.add(key)
            total[e["name"]] += e["dur"]
            count[e["name"]] += 1
    print("%-26s %8s %12s %10s" % ("phase", "events", "total_ms", "share"))
    print("span %.3f s" % wall)
    for name, us in total.most_common():
        share = "%.1f%%" % (100.0 * us / 1e6 / wall) if wall else "-"
        print("%-26s %8d %12.1f %10s" % (name, count[name], us / 1000.0, share))


if __name__ == "__main__":
    main()
