#!/usr/bin/python3
"""Draws busbw against message size from a riseml-bench CSV: plot_busbw.py IN.csv OUT.png

One panel per mode (back to back out of place, in place, per call); one line per
implementation (the median round), shaded from its slowest to its fastest round; the
memory-bound limit, when measured, dashed; the TCP stream limit dotted."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TITLES = {"b2b_out": "back to back, out of place", "b2b_in": "back to back, in place",
          "per_call": "per call, in place"}
LIMITS = {"limit": ("k--", "memory-bound limit"), "stream-limit": ("k:", "TCP stream limit")}


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    modes = [m for m in TITLES if any(r["mode"] == m and r["impl"] not in LIMITS for r in rows)]
    fig, axes = plt.subplots(1, len(modes), figsize=(5.2 * len(modes), 4.2), sharey=True, squeeze=False)
    first = rows[0]
    for ax, mode in zip(axes[0], modes):
        for impl in dict.fromkeys(r["impl"] for r in rows if r["impl"] not in LIMITS):
            mine = [r for r in rows if r["impl"] == impl and r["mode"] == mode]
            if not mine:
                continue
            x = [int(r["size"]) for r in mine]
            line, = ax.plot(x, [float(r["busbw_GBps"]) for r in mine], marker="o", label=impl)
            ax.fill_between(x, [float(r["busbw_low_GBps"]) for r in mine],
                            [float(r["busbw_high_GBps"]) for r in mine], color=line.get_color(), alpha=0.2)
        for impl, (style, label) in LIMITS.items():
            limit = [r for r in rows if r["impl"] == impl]
            if limit:
                ax.plot([int(r["size"]) for r in limit], [float(r["busbw_GBps"]) for r in limit], style,
                        label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_title(TITLES[mode], fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("busbw (GB/s)")
    axes[0][-1].legend(fontsize=8)
    fig.suptitle(f"allreduce {first['type']} {first['redop']}, {first['ranks']} ranks "
                 "(median round; shaded: slowest to fastest)")
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
