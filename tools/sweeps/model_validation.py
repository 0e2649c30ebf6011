#!/usr/bin/python3
"""The step model against the replay: reads model-validation.sh's OUT_DIR, runs
`riseml estimate --network` with each cell's fit, and prints a markdown table (and with a PNG
path, a plot) of measured and predicted step times.

    /usr/bin/python3 tools/sweeps/model_validation.py OUT_DIR [PLOT.png] [--riseml PATH]

Two predictions per cell: with the fit taken on the same nodes (the calibration the model is
meant to get), and with the 2-node fit of the same rate (what a fit on fewer nodes carries over).
Exit status 1 when a same-nodes prediction misses by more than 10%."""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LINE = re.compile(r"rate=(\S+) nodes=(\d+) variant=(\S+) replay: model=(\S+) .*?step_ms=([\d.]+) "
                  r"compute_ms=([\d.]+) efficiency=([\d.]+) link_bound=([\d.]+)")
STEP = re.compile(r"^  step ([\d.]+) ms, compute ([\d.]+) ms, .*efficiency ([\d.]+)", re.M)


def predict(riseml, fit, model, nodes, fp16):
    cmd = [riseml, "estimate", "--network", fit, "--workload", model, "--nodes", str(nodes)]
    if fp16:
        cmd.append("--fp16")
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    m = STEP.search(out.stdout)
    if out.returncode != 0 or not m:
        raise SystemExit(f"model_validation: {' '.join(cmd)} failed:\n{out.stderr}{out.stdout}")
    return float(m.group(1)), float(m.group(3))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("plot", nargs="?")
    ap.add_argument("--riseml", default=os.environ.get("RISEML_CLI", os.path.join(REPO, "build/translator/riseml")))
    a = ap.parse_args()
    cells = []
    with open(os.path.join(a.out_dir, "replay.txt"), encoding="utf-8") as f:
        for line in f:
            m = LINE.search(line)
            if not m:
                print(f"model_validation: skipped (no result): {line.strip()}", file=sys.stderr)
                continue
            rate, nodes, variant, model = m.group(1), int(m.group(2)), m.group(3), m.group(4)
            step, compute, eff = float(m.group(5)), float(m.group(6)), float(m.group(7))
            fp16 = variant == "fp16"
            same = os.path.join(a.out_dir, f"fit-{rate}-N{nodes}.yml")
            two = os.path.join(a.out_dir, f"fit-{rate}-N2.yml")
            p_same, e_same = predict(a.riseml, same, model, nodes, fp16)
            p_two, e_two = (predict(a.riseml, two, model, nodes, fp16) if os.path.exists(two) else (float("nan"),) * 2)
            cells.append(dict(rate=rate, nodes=nodes, variant=variant, model=model, step=step, compute=compute,
                              eff=eff, p_same=p_same, e_same=e_same, p_two=p_two, e_two=e_two))
    if not cells:
        raise SystemExit("model_validation: no replay results in " + a.out_dir)

    print("| rate | model | nodes | gradients | measured step ms | predicted ms | error | measured eff. | "
          "predicted eff. | 2-node fit: ms | error |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    worst = 0.0
    for c in cells:
        err = (c["p_same"] - c["step"]) / c["step"]
        err_two = (c["p_two"] - c["step"]) / c["step"]
        worst = max(worst, abs(err))
        print(f"| {c['rate']} | {c['model']} | {c['nodes']} | {'float16' if c['variant'] == 'fp16' else 'float32'} | "
              f"{c['step']:.0f} | {c['p_same']:.0f} | {100 * err:+.1f}% | {c['eff']:.3f} | {c['e_same']:.3f} | "
              f"{c['p_two']:.0f} | {100 * err_two:+.1f}% |")
    within = sum(abs((c["p_same"] - c["step"]) / c["step"]) <= 0.10 for c in cells)
    print(f"\n{within} of {len(cells)} cells within 10% (fit on the same nodes); largest miss {100 * worst:.1f}%")

    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        rates = sorted({c["rate"] for c in cells}, key=lambda r: float(re.sub(r"[a-z]", "", r)))
        fig, axes = plt.subplots(1, len(rates), figsize=(6 * len(rates), 4.5), squeeze=False)
        models = sorted({c["model"] for c in cells})
        colors = dict(zip(models, plt.rcParams["axes.prop_cycle"].by_key()["color"]))
        for ax, rate in zip(axes[0], rates):
            for model in models:
                for variant, style in (("fp32", "-"), ("fp16", "--")):
                    cs = sorted((c for c in cells if c["rate"] == rate and c["model"] == model
                                 and c["variant"] == variant), key=lambda c: c["nodes"])
                    if not cs:
                        continue
                    x = [c["nodes"] for c in cs]
                    ax.plot(x, [c["e_same"] for c in cs], style, color=colors[model],
                            label=f"{model} {'fp16' if variant == 'fp16' else 'fp32'} model")
                    ax.plot(x, [c["eff"] for c in cs], "o" if variant == "fp32" else "s", color=colors[model],
                            fillstyle="full" if variant == "fp32" else "none")
            ax.set_title(f"{rate} links: model (lines) and replay (markers)")
            ax.set_xlabel("nodes (1 rank each)")
            ax.set_ylabel("scaling efficiency")
            ax.set_xticks(sorted({c["nodes"] for c in cells}))
            ax.set_ylim(0, 1)
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=7, loc="upper right")  # the 1 Gbit/s panel is empty there
        fig.tight_layout()
        fig.savefig(a.plot, dpi=110)
        print(f"wrote {a.plot}", file=sys.stderr)
    return 0 if worst <= 0.10 else 1


if __name__ == "__main__":
    sys.exit(main())
