#!/usr/bin/python3
"""The step model against the replay: reads model-validation.sh's OUT_DIR, runs
`riseml estimate --network` with each cell's fit, and prints a markdown table (and with a PNG
path, a plot) of measured and predicted step times.

    /usr/bin/python3 tools/sweeps/model_validation.py OUT_DIR [PLOT.png] [--riseml PATH]
        [--workloads DIR] [--limit 10] [--spread-quantiles LOW HIGH] [--bandwidth-from-check]

Two predictions per cell: with the fit taken on the same nodes (the calibration the model is
meant to get), and with the 2-node fit of the same rate (what a fit on fewer nodes carries over).
A cell replayed in several rounds (model-validation.sh --rounds) is measured as the median of
its rounds, and every round is listed; with a fit that has link_spread, the range the estimate
prints and whether every round fell inside it. --workloads DIR: the sweep's folder of
.workload files. --spread-quantiles LOW HIGH: the range from other quantiles of the fit's bursts
(each fit's log, fit-RATE-NN.log, lists every burst's factor; nearest rank, as riseml-bench
--fit takes them), to set a grid measured with one choice beside another. --bandwidth-from-check:
the link's bandwidth from the fit's own check (the ring allreduce of 16 and 64 MiB over the
hosts, in its log) instead of the allgather's blocks: the beta that makes the model's ring (with
the fit's latency and reduce rate) match those two, least squares on relative error; the spread
is left as the fit measured it. Exit status 1 when a same-nodes prediction misses by more than
--limit %."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LINE = re.compile(r"rate=(\S+) nodes=(\d+) variant=(\S+) (?:round=\d+ )?replay: model=(\S+) .*?step_ms=([\d.]+) "
                  r"compute_ms=([\d.]+) efficiency=([\d.]+) link_bound=([\d.]+)")
STEP = re.compile(r"^  step ([\d.]+) ms, compute ([\d.]+) ms, .*efficiency ([\d.]+)", re.M)
RANGE = re.compile(r"^  range ([\d.]+) - ([\d.]+) ms", re.M)


def nearest_rank(values, q):
    v = sorted(values)
    return v[min(int(q * (len(v) - 1) + 0.5), len(v) - 1)]


def with_quantiles(fit, low, high, into):
    """A copy of the fit in `into` whose spread's fast and slow are these quantiles of its bursts."""
    log = fit[:-len(".yml")] + ".log"
    with open(log, encoding="utf-8") as f:
        m = re.search(r"every burst, ms \(factor\):(.*)", f.read())
    if not m:
        raise SystemExit(f"model_validation: {log} lists no bursts (a fit without a spread?)")
    factors = [float(x) for x in re.findall(r"\(([\d.]+)\)", m.group(1))]
    with open(fit, encoding="utf-8") as f:
        text = f.read()
    # The spread's line only (hand_over_lag has fast and slow keys too).
    text = re.sub(r"(spread: \{fast: )[\d.]+", rf"\g<1>{nearest_rank(factors, low):.3f}", text, count=1)
    text = re.sub(r"(spread: \{.*?slow: )[\d.]+", rf"\g<1>{nearest_rank(factors, high):.3f}", text, count=1)
    path = os.path.join(into, os.path.basename(fit))
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def rate_bytes_per_s(text):
    m = re.match(r"([\d.]+)\s*(GB/s|MB/s|gbyte|mbyte)", text)
    if not m:
        raise SystemExit(f"model_validation: cannot read the rate '{text}'")
    return float(m.group(1)) * (1e9 if m.group(2) in ("GB/s", "gbyte") else 1e6)


def check_bandwidth(fit_text, log_text, sizes=(16 << 20, 64 << 20)):
    """The nodes_link bandwidth (bytes/s) at which the model's plain ring, 2(p-1) steps of
    alpha + S/p beta plus (p-1)/p S gamma, matches the fit's ring allreduce check at `sizes`."""
    link = re.search(r"nodes_link: \{bandwidth: [^,]+, latency: ([\d.]+)(ns|us|ms)\}", fit_text)
    reduce = re.search(r"reduce_bandwidth: (\S+)", fit_text)
    if not link or not reduce:
        raise SystemExit("model_validation: the fit has no nodes_link or reduce_bandwidth as riseml-bench --fit writes them")
    alpha = float(link.group(1)) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3}[link.group(2)]
    gamma = 1 / rate_bytes_per_s(reduce.group(1))
    m = re.search(r"# check: ring allreduce over the (\d+) hosts.*?\n.*?\n((?:\s*\d+\s+[\d.]+.*\n)+)", log_text)
    if not m:
        raise SystemExit("model_validation: the fit's log has no ring allreduce check")
    p = int(m.group(1))
    measured = {int(line.split()[0]): float(line.split()[1]) * 1e-3 for line in m.group(2).splitlines()}
    num = den = 0.0
    for size in sizes:
        if size not in measured:
            raise SystemExit(f"model_validation: the fit's ring allreduce check has no row of {size} bytes")
        t = measured[size]
        fixed, per_beta = 2 * (p - 1) * alpha + (p - 1) / p * size * gamma, 2 * (p - 1) * size / p
        num += (per_beta / t) * (t - fixed) / t
        den += (per_beta / t) ** 2
    return den / num


def with_check_bandwidth(fit, log, into):
    """A copy of the fit in `into` whose nodes_link bandwidth is its ring check's (check_bandwidth,
    from the fit's log)."""
    with open(fit, encoding="utf-8") as f:
        text = f.read()
    with open(log, encoding="utf-8") as f:
        log = f.read()
    bandwidth = check_bandwidth(text, log)
    text = re.sub(r"(nodes_link: \{bandwidth: )[^,]+", lambda m: f"{m.group(1)}{bandwidth / 1e9:.4f}GB/s", text, count=1)
    path = os.path.join(into, os.path.basename(fit))
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def predict(riseml, fit, model, nodes, fp16, workloads=None):
    if workloads and os.path.exists(os.path.join(workloads, model + ".workload")):
        model = os.path.join(workloads, model + ".workload")
    cmd = [riseml, "estimate", "--network", fit, "--workload", model, "--nodes", str(nodes), "--gpus-per-node", "1"]
    if fp16:
        cmd.append("--fp16")
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    m = STEP.search(out.stdout)
    if out.returncode != 0 or not m:
        raise SystemExit(f"model_validation: {' '.join(cmd)} failed:\n{out.stderr}{out.stdout}")
    r = RANGE.search(out.stdout)
    return float(m.group(1)), float(m.group(3)), (float(r.group(1)), float(r.group(2))) if r else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("plot", nargs="?")
    ap.add_argument("--riseml", default=os.environ.get("RISEML_CLI", os.path.join(REPO, "build/translator/riseml")))
    ap.add_argument("--workloads")
    ap.add_argument("--limit", type=float, default=10.0)
    ap.add_argument("--spread-quantiles", nargs=2, type=float, metavar=("LOW", "HIGH"))
    ap.add_argument("--bandwidth-from-check", action="store_true")
    a = ap.parse_args()
    if a.spread_quantiles and not 0 <= a.spread_quantiles[0] <= a.spread_quantiles[1] <= 1:
        raise SystemExit("model_validation: --spread-quantiles needs 0 <= LOW <= HIGH <= 1")
    rewritten = tempfile.TemporaryDirectory()
    rewritten_fits = {}  # fit -> its copy with the quantiles or the check's bandwidth, written once

    def rewrite(fit):
        if fit not in rewritten_fits:
            path = fit
            if a.spread_quantiles:
                path = with_quantiles(path, *a.spread_quantiles, rewritten.name)
            if a.bandwidth_from_check:
                path = with_check_bandwidth(path, fit[:-len(".yml")] + ".log", rewritten.name)
            rewritten_fits[fit] = path
        return rewritten_fits[fit]

    runs = {}  # (rate, nodes, variant, model) -> [(step, compute, eff)], in the order run
    with open(os.path.join(a.out_dir, "replay.txt"), encoding="utf-8") as f:
        for line in f:
            m = LINE.search(line)
            if not m:
                print(f"model_validation: skipped (no result): {line.strip()}", file=sys.stderr)
                continue
            key = (m.group(1), int(m.group(2)), m.group(3), m.group(4))
            runs.setdefault(key, []).append((float(m.group(5)), float(m.group(6)), float(m.group(7))))
    cells = []
    for (rate, nodes, variant, model), got in runs.items():
        fp16 = variant == "fp16"
        steps = [g[0] for g in got]
        step = statistics.median(steps)
        eff = statistics.median(g[2] for g in got)
        same = os.path.join(a.out_dir, f"fit-{rate}-N{nodes}.yml")
        two = os.path.join(a.out_dir, f"fit-{rate}-N2.yml")
        if a.spread_quantiles or a.bandwidth_from_check:
            same = rewrite(same)
            two = rewrite(two) if os.path.exists(two) else two
        p_same, e_same, rng = predict(a.riseml, same, model, nodes, fp16, a.workloads)
        p_two, e_two, _ = (predict(a.riseml, two, model, nodes, fp16, a.workloads) if os.path.exists(two)
                           else (float("nan"), float("nan"), None))
        cells.append(dict(rate=rate, nodes=nodes, variant=variant, model=model, step=step, steps=steps,
                          eff=eff, p_same=p_same, e_same=e_same, p_two=p_two, e_two=e_two, range=rng))
    if not cells:
        raise SystemExit("model_validation: no replay results in " + a.out_dir)
    cells.sort(key=lambda c: (float(re.sub(r"[a-z]", "", c["rate"])), c["nodes"], c["model"], c["variant"]))

    rounds = max(len(c["steps"]) for c in cells)
    ranged = any(c["range"] for c in cells)
    print("| rate | model | nodes | gradients | measured step ms" + (" (median; rounds)" if rounds > 1 else "") +
          " | predicted ms | error |" + (" range ms | inside |" if ranged else "") +
          " measured eff. | predicted eff. | 2-node fit: ms | error |")
    print("|---|---|---:|---|---:|---:|---:|" + ("---:|---|" if ranged else "") + "---:|---:|---:|---:|")
    worst, inside = 0.0, 0
    for c in cells:
        err = (c["p_same"] - c["step"]) / c["step"]
        err_two = (c["p_two"] - c["step"]) / c["step"]
        worst = max(worst, abs(err))
        measured = f"{c['step']:.0f}"
        if rounds > 1:
            measured += " (" + ", ".join(f"{x:.0f}" for x in c["steps"]) + ")"
        cols = ""
        if ranged:
            lo, hi = c["range"] if c["range"] else (float("nan"), float("nan"))
            ok = c["range"] is not None and all(lo <= x <= hi for x in c["steps"])
            inside += ok
            cols = f" {lo:.0f}-{hi:.0f} | {'yes' if ok else 'no'} |"
        print(f"| {c['rate']} | {c['model']} | {c['nodes']} | {'float16' if c['variant'] == 'fp16' else 'float32'} | "
              f"{measured} | {c['p_same']:.0f} | {100 * err:+.1f}% |{cols} {c['eff']:.3f} | {c['e_same']:.3f} | "
              f"{c['p_two']:.0f} | {100 * err_two:+.1f}% |")
    errors = sorted((c["p_same"] - c["step"]) / c["step"] for c in cells)
    for limit in sorted({5.0, a.limit}):
        within = sum(abs(e) <= limit / 100 for e in errors)
        print(f"{'' if limit != min(5.0, a.limit) else chr(10)}{within} of {len(cells)} cells within {limit:g}% "
              f"(fit on the same nodes)")
    print(f"errors {100 * errors[0]:+.1f}% to {100 * errors[-1]:+.1f}%, mean {100 * statistics.mean(errors):+.2f}%, "
          f"largest miss {100 * worst:.1f}%")
    if ranged:
        print(f"{inside} of {len(cells)} cells with every round inside the printed range")
        # How wide the range is around the point, per node count (median over the cells).
        widths = []
        for nodes in sorted({c["nodes"] for c in cells}):
            cs = [c for c in cells if c["nodes"] == nodes and c["range"]]
            if cs:
                up = statistics.median(100 * (c["range"][1] / c["p_same"] - 1) for c in cs)
                down = statistics.median(100 * (1 - c["range"][0] / c["p_same"]) for c in cs)
                widths.append(f"{nodes} nodes +{up:.1f}% / -{down:.1f}%")
        print("range around the point (median of the cells): " + ", ".join(widths))

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
    return 0 if worst <= a.limit / 100 else 1


if __name__ == "__main__":
    sys.exit(main())
