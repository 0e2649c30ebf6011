#!/usr/bin/python3
"""Draws predicted scaling efficiency against GPUs for riseml estimate --plot:
plot_estimate.py IN.csv OUT.png TITLE (CSV columns: gpus, efficiency, link_bound)."""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    gpus = [int(r["gpus"]) for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(gpus, [float(r["efficiency"]) for r in rows], marker="o", label="predicted efficiency")
    ax.plot(gpus, [float(r["link_bound"]) for r in rows], "k:", label="the links allow")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("scaling efficiency")
    ax.set_title(sys.argv[3] if len(sys.argv) > 3 else "riseml estimate")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)


if __name__ == "__main__":
    main()
