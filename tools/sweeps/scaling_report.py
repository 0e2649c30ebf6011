#!/usr/bin/python3
"""Tables and a plot from the sweeps behind docs/scaling.md.

    /usr/bin/python3 tools/sweeps/scaling_report.py SWEEP_DIR [PLOT.png]

Reads SWEEP_DIR/RATE-Nn-Pp.png.csv (cross-node-sweep.sh) and SWEEP_DIR/replay.txt
(replay-sweep.sh); prints markdown tables; draws busbw against size, one panel per rate and node
count (ours in place, Open MPI, Gloo, the link limit)."""
import csv
import glob
import os
import re
import sys


def busbw_rows(sweep):
    runs = {}
    for path in sorted(glob.glob(os.path.join(sweep, "*-N*-P*.png.csv"))):
        m = re.match(r"(.+)-N(\d+)-P(\d+)\.png\.csv", os.path.basename(path))
        rate, nodes, ppn = m.group(1), int(m.group(2)), int(m.group(3))
        runs[(rate, nodes, ppn)] = list(csv.DictReader(open(path)))
    return runs


def value(rows, impl, mode, size, key="busbw_GBps"):
    for r in rows:
        if r["impl"] == impl and r["mode"] == mode and int(r["size"]) == size:
            return float(r[key])
    return None


def human(size):
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"


def busbw_tables(runs):
    rates = sorted({k[0] for k in runs}, key=lambda r: float(re.match(r"[\d.]+", r).group()))
    for rate in rates:
        print(f"\n**{rate} links** (busbw GB/s, back to back, median of the rounds; ratios in place)\n")
        print("| nodes x ranks | size | link limit | ours out | ours in | Open MPI in | Gloo in | ours/limit | ours/MPI | ours/Gloo |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for (r, nodes, ppn), rows in sorted(runs.items()):
            if r != rate:
                continue
            sizes = sorted({int(x["size"]) for x in rows if x["impl"] == "riseml"})
            for s in sizes:
                lim = value(rows, "stream-limit", "b2b_out", s)
                out = value(rows, "riseml", "b2b_out", s)
                inp = value(rows, "riseml", "b2b_in", s)
                mpi = value(rows, "mpi", "b2b_in", s)
                gloo = value(rows, "gloo", "b2b_in", s)
                f = lambda x: f"{x:.3f}" if x else "n/a"
                q = lambda a, b: f"{a / b:.2f}" if a and b else "n/a"
                print(f"| {nodes} x {ppn} | {human(s)} | {f(lim)} | {f(out)} | {f(inp)} | {f(mpi)} | {f(gloo)} "
                      f"| {q(inp, lim)} | {q(inp, mpi)} | {q(inp, gloo)} |")


def replay_tables(sweep):
    path = os.path.join(sweep, "replay.txt")
    if not os.path.exists(path):
        return
    rows = []
    for line in open(path):
        d = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        rows.append(d)
    models = list(dict.fromkeys(r["model"] for r in rows))
    rates = list(dict.fromkeys(r["rate"] for r in rows))
    for rate in rates:
        print(f"\n**Replay at {rate}** (efficiency = step alone / step; in brackets what the links allow at best)\n")
        print("| model | nodes | 1/node fp32 | 1/node fp16 | 2/node hierarchical | 2/node flat ring |")
        print("|---|---:|---|---|---|---|")
        for model in models:
            for nodes in sorted({int(r["nodes"]) for r in rows if r["rate"] == rate}):
                cells = []
                for variant in ("fp32", "fp16", "hier", "ring"):
                    m = [r for r in rows if r["rate"] == rate and r["model"] == model and int(r["nodes"]) == nodes
                         and r["variant"] == variant]
                    if not m or "efficiency" not in m[0]:
                        cells.append("n/a")
                        continue
                    r = m[0]
                    cells.append(f"{float(r['efficiency']):.2f} ({float(r['link_bound']):.2f})"
                                 + ("" if r.get("wrong") == "0" else " WRONG"))
                print(f"| {model} | {nodes} | " + " | ".join(cells) + " |")


def plot(runs, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    keys = sorted({(k[0], k[1]) for k in runs if k[2] == 1},
                  key=lambda k: (float(re.match(r"[\d.]+", k[0]).group()), k[1]))
    rates = list(dict.fromkeys(k[0] for k in keys))
    nodes = sorted({k[1] for k in keys})
    fig, axes = plt.subplots(len(rates), len(nodes), figsize=(4.6 * len(nodes), 3.8 * len(rates)),
                             sharex=True, squeeze=False)
    for i, rate in enumerate(rates):
        for j, n in enumerate(nodes):
            ax = axes[i][j]
            rows = runs.get((rate, n, 1), [])
            for impl, mode, style, label in (("riseml", "b2b_in", "o-", "riseml"), ("mpi", "b2b_in", "s-", "Open MPI"),
                                             ("gloo", "b2b_in", "^-", "Gloo"),
                                             ("stream-limit", "b2b_out", "k:", "link limit (TCP stream)")):
                pts = [(int(r["size"]), float(r["busbw_GBps"])) for r in rows if r["impl"] == impl and r["mode"] == mode]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
            ax.set_xscale("log", base=2)
            ax.set_title(f"{n} nodes x 1 rank, {rate} links", fontsize=10)
            ax.grid(True, alpha=0.3)
            if j == 0:
                ax.set_ylabel("busbw (GB/s)")
            if i == len(rates) - 1:
                ax.set_xlabel("message size (bytes)")
    axes[0][-1].legend(fontsize=8)
    fig.suptitle("allreduce float32 sum across testbed nodes, back to back in place (median of rounds)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)


def main():
    runs = busbw_rows(sys.argv[1])
    busbw_tables(runs)
    replay_tables(sys.argv[1])
    if len(sys.argv) > 2 and runs:
        plot(runs, sys.argv[2])


if __name__ == "__main__":
    main()
