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
order was handed to the engine (the model: forward + its compute). Prints, per measured
collective, its start, copies, wire and end, beside the model's collective that carries its last
gradient and when that one ends (the two may fuse differently); then the sums: where the
measured step spent time the model did not give it.
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


def read_timeline(path, first_gradient):
    """Each (tensor, phase) of the last step: the step begins where the first gradient in
    backward order was last handed over (its last NEGOTIATE); a phase a tensor did not have in
    that step (a copy when it went unfused) is absent, not taken from an earlier step."""
    text = open(path).read().rstrip()
    if not text.endswith("]"):
        text = text.rstrip(",") + "\n]"  # an engine that did not shut down leaves it open
    rows, events = {}, []
    for e in json.loads(text):
        if e.get("ph") == "M":
            rows[e["tid"]] = e["args"]["name"]
        elif e.get("ph") == "X":
            events.append(e)
    last = {}
    for e in events:
        last[(rows.get(e["tid"]), e["name"])] = (e["ts"] / 1e3, e["dur"] / 1e3, e.get("args", {}).get("bytes", 0))
    step_start = last.get((first_gradient, "NEGOTIATE"), (0,))[0]
    return {k: v for k, v in last.items() if v[0] >= step_start - 1e-6}


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


def index_ranges(text):
    """The schedule's "0-3,7" as [0, 1, 2, 3, 7]."""
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
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
                         "wire": float(f[8]), "end": float(f[9]),
                         "indices": index_ranges(f[10]) if len(f) > 10 else None})
    if not rows:
        sys.exit("schedule_vs_timeline: no schedule in %s (run riseml estimate with --schedule)" % path)
    step = re.search(r"step ([0-9.]+) ms, compute", open(path).read())
    return rows, float(step.group(1)) if step else None


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    names, compute_us, forward_ms = read_workload(sys.argv[1])
    last = read_timeline(sys.argv[2], names[0])
    measured = measured_collectives(names, last)
    model, model_step = read_schedule(sys.argv[3])
    t0 = last[(names[0], "NEGOTIATE")][0] if (names[0], "NEGOTIATE") in last else measured[0]["start"]
    m0 = forward_ms + compute_us[0] / 1e3
    # Paired by gradient: the model's collective that carries each measured one's last gradient
    # (the engine and the model may fuse differently; the end of that gradient is comparable).
    index = {n: i for i, n in enumerate(names)}
    carrier = {}
    for mm in model:
        first = index.get(mm["first"])
        if first is None:
            sys.exit("schedule_vs_timeline: the schedule names %s, not in the workload" % mm["first"])
        for k in mm["indices"] or range(first, first + mm["count"]):
            carrier[k] = mm
    print("%-24s %5s %11s | %9s %9s %9s %9s | %-24s %5s %9s | %9s" % (
        "first gradient", "n", "bytes", "start", "copies", "wire", "end", "model: carried by", "n", "end",
        "end diff"))
    sums = {"copy": [0.0, 0.0], "wire": [0.0, 0.0], "gap": [0.0, 0.0]}
    prev_end = None
    for g in measured:
        meas = (g["start"] - t0, g["copy"], g["wire"], g["end"] - t0)
        mm = carrier.get(g["tensors"][-1])
        m_end = mm["end"] - m0 if mm else float("nan")
        print("%-24s %5d %11d | %9.2f %9.2f %9.2f %9.2f | %-24s %5s %9.2f | %+9.2f" % (
            names[g["first"]][:24], len(g["tensors"]), g["bytes"], *meas,
            (mm["first"] if mm else "-")[:24], mm["count"] if mm else "-", m_end, meas[3] - m_end))
        if prev_end is not None:
            sums["gap"][0] += max(0.0, meas[0] - prev_end)
        prev_end = meas[3]
        sums["copy"][0] += meas[1]
        sums["wire"][0] += meas[2]
    prev_end = None
    for mm in model:
        if prev_end is not None:
            sums["gap"][1] += max(0.0, mm["start"] - prev_end)
        prev_end = mm["end"]
        sums["copy"][1] += mm["copy"]
        sums["wire"][1] += mm["wire"]
    print("\nsums, ms            measured      model")
    for k in ("copy", "wire", "gap"):
        print("%-18s %9.2f  %9.2f" % (k, sums[k][0], sums[k][1]))
    print("%-18s %9.2f  %9.2f" % ("last end", measured[-1]["end"] - t0, model[-1]["end"] - m0))
    print("collectives        %9d  %9d" % (len(measured), len(model)))
    if model_step:
        print("model step %.1f ms" % model_step)


if __name__ == "__main__":
    main()
