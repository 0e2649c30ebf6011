#!/usr/bin/python3
"""Draws busbw against message size from a riseml-bench CSV: plot_busbw.py IN.csv OUT.png"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for impl in dict.fromkeys(r["impl"] for r in rows):
        mine = [r for r in rows if r["impl"] == impl]
        ax.plot([int(r["size"]) for r in mine], [float(r["busbw_GBps"]) for r in mine],
                marker="o", label=impl)
    first = rows[0]
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_title(f"allreduce {first['type']} {first['redop']}, {first['ranks']} ranks")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
