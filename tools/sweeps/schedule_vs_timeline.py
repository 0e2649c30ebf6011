#!/usr/bin/python3
"""The model's schedule of a step beside what the engine did in riseml-replay's last step.

    RISEML_TIMELINE=/tmp/t.json srun -N2 --mpi=pmix riseml-replay WORKLOAD [--fp16] --steps 3
    riseml estimate --network FIT --workload WORKLOAD --nodes 2 --gpus-per-node 1 [--fp16] \\
        --schedule > est.txt
    python3 tools/sweeps/schedule_vs_timeline.py WORKLOAD /tmp/t.json est.txt

The timeline (rank 0's, Chrome trace events) has per tensor NEGOTIATE (enqueued until ready on
every rank), QUEUE, MEMCPY_IN_FUSION_BUFFER, ALLREDUCE and MEMCPY_OUT_FUSION_BUFFER. The last
occurrence of each tensor's phases is its last step; tensors whose ALLREDUCE began at the same
moment were one fused collective. Both clocks are set to 0 where the first gradient in backward
order was handed to the engine (the model: forward + its compute). Prints, per collective,
start, copies, wire and end of both, and then the sums: where the measured step spent time the
model did not give it.
"""
import json
import re
import sys


def read_workload(path):
    names, compute_us, forward_ms = [], [], 0.0
    with open(path) as f:
        for line in f:
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            if fields[0] == "grad":
                compute_us.append(float(fields[1]))
                names.append(fields[2])
            elif fields[0] == "forward_ms":
                forward_ms = float(fields[1])
    return names, compute_us, forward_ms


def read_timeline(path):
    text = open(path).read().rstrip()
    if not text.endswith("]"):
        text = text.rstrip(",") + "\n]"  # an engine that did not shut down leaves it open
    rows, last = {}, {}
    for e in json.loads(text):
        if e.get("ph") == "M":
            rows[e["tid"]] = e["args"]["name"]
        elif e.get("ph") == "X":
            last[(rows.get(e["tid"]), e["name"])] = (e["ts"] / 1e3, e["dur"] / 1e3, e.get("args", {}).get("bytes", 0))
    return last


def measured_collectives(names, last):
    groups = {}
    for i, n in enumerate(names):
        if (n, "ALLREDUCE") not in last:
            sys.exit("schedule_vs_timeline: %s has no ALLREDUCE in the timeline (the right workload?)" % n)
        start, dur, nbytes = last[(n, "ALLREDUCE")]
        g = groups.setdefault(start, {"first": i, "tensors": [], "wire": dur, "copy": 0.0, "bytes": 0})
        g["tensors"].append(i)
        g["bytes"] += nbytes
        for phase in ("MEMCPY_IN_FUSION_BUFFER", "MEMCPY_OUT_FUSION_BUFFER"):
            if (n, phase) in last:
                g["copy"] += last[(n, phase)][1]
    out = []
    for start in sorted(groups):
        g = groups[start]
        first = names[g["first"]]
        copy_in = last.get((first, "MEMCPY_IN_FUSION_BUFFER"))
        g["start"] = copy_in[0] if copy_in and len(g["tensors"]) > 1 else start
        end = start + g["wire"]
        last_name = names[g["tensors"][-1]]
        if (last_name, "MEMCPY_OUT_FUSION_BUFFER") in last:
            ts, dur, _ = last[(last_name, "MEMCPY_OUT_FUSION_BUFFER")]
            end = ts + dur
        g["end"] = end
        out.append(g)
    return out


def read_schedule(path):
    rows, on = [], False
    for line in open(path):
        if line.startswith("cycle ") and "wire ms" in line:
            on = True
            continue
        if on:
            f = line.split()
            if len(f) < 10:
                break
            rows.append({"count": int(f[1]), "first": f[2], "bytes": float(f[3]), "algorithm": f[4],
                         "cycle_start": float(f[5]), "start": float(f[6]), "copy": float(f[7]),
                         "wire": float(f[8]), "end": float(f[9])})
    if not rows:
        sys.exit("schedule_vs_timeline: no schedule in %s (run riseml estimate with --schedule)" % path)
    step = re.search(r"step ([0-9.]+) ms, compute", open(path).read())
    return rows, float(step.group(1)) if step else None


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    names, compute_us, forward_ms = read_workload(sys.argv[1])
    last = read_timeline(sys.argv[2])
    measured = measured_collectives(names, last)
    model, model_step = read_schedule(sys.argv[3])
    t0 = last[(names[0], "NEGOTIATE")][0] if (names[0], "NEGOTIATE") in last else measured[0]["start"]
    m0 = forward_ms + compute_us[0] / 1e3
    print("%-24s %5s %11s | %9s %9s %9s %9s | %9s %9s %9s %9s | %8s" % (
        "first gradient", "n", "bytes", "start", "copies", "wire", "end", "m.start", "m.copies", "m.wire",
        "m.end", "wire err"))
    sums = {"copy": [0, 0], "wire": [0, 0], "gap": [0, 0]}
    prev_end = [None, None]
    for i, g in enumerate(measured):
        mm = model[i] if i < len(model) else None
        meas = (g["start"] - t0, g["copy"], g["wire"], g["end"] - t0)
        mod = (mm["start"] - m0, mm["copy"], mm["wire"], mm["end"] - m0) if mm else (0, 0, 0, 0)
        err = "%+.1f%%" % ((mod[2] - meas[2]) / meas[2] * 100) if mm and meas[2] > 0 else ""
        print("%-24s %5d %11d | %9.2f %9.2f %9.2f %9.2f | %9.2f %9.2f %9.2f %9.2f | %8s" % (
            names[g["first"]][:24], len(g["tensors"]), g["bytes"],
            *meas, *mod, err))
        if mm and mm["count"] != len(g["tensors"]):
            print("  ^ the model fused %d gradients from %s here" % (mm["count"], mm["first"]))
        for k, v in ((0, meas), (1, mod)):
            if prev_end[k] is not None:
                sums["gap"][k] += max(0.0, v[0] - prev_end[k])
            prev_end[k] = v[3]
        sums["copy"][0] += meas[1]
        sums["wire"][0] += meas[2]
        if mm:
            sums["copy"][1] += mod[1]
            sums["wire"][1] += mod[2]
    print("\nsums, ms            measured      model")
    for k in ("copy", "wire", "gap"):
        print("%-18s %9.2f  %9.2f" % (k, sums[k][0], sums[k][1]))
    print("%-18s %9.2f  %9.2f" % ("last end", measured[-1]["end"] - t0, model[-1]["end"] - m0))
    print("collectives        %9d  %9d" % (len(measured), len(model)))
    if model_step:
        print("model step %.1f ms" % model_step)


if __name__ == "__main__":
    main()
