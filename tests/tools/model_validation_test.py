"""tools/sweeps/model_validation.py --bandwidth-from-check: the bandwidth read back from a fit's
ring allreduce check is the one the check was made with, and the rewritten fit carries it.

    python3 tests/tools/model_validation_test.py
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "sweeps"))
import model_validation  # noqa: E402

FIT = """network:
  gpus_per_node: 1
  nodes_link: {bandwidth: 0.2772GB/s, latency: 20.0us}   # 4 hosts; fit within 33%
  reduce_bandwidth: 10GB/s
  copy_bandwidth: 4.868GB/s
"""


def log_with_check(hosts, bandwidth, alpha=20e-6, gamma=1 / 10e9, skew=(1.0, 1.0, 1.0)):
    """A fit's log whose ring check took what the model's ring gives at `bandwidth` (times `skew`)."""
    rows = []
    for size, k in zip((1 << 20, 16 << 20, 64 << 20), skew):
        t = 2 * (hosts - 1) * (alpha + size / hosts / bandwidth) + (hosts - 1) / hosts * size * gamma
        rows.append(f"{size:10d} {t * k * 1e3:14.2f} {t * 1.05e3:14.2f} {5.0:+7.1f}%")
    return (f"# between nodes: latency 20.0 us, bandwidth 277.2 MB/s\n\n"
            f"# check: ring allreduce over the {hosts} hosts, float32, in place; the model's ring with the fit\n"
            f"     bytes    measured_ms       model_ms    error\n" + "\n".join(rows) + "\n\n# engine cycle: ...\n")


class CheckBandwidth(unittest.TestCase):
    def test_the_checks_own_bandwidth_comes_back(self):
        for hosts in (2, 4, 8):
            got = model_validation.check_bandwidth(FIT, log_with_check(hosts, 300e6))
            self.assertAlmostEqual(got / 300e6, 1.0, delta=2e-4, msg=f"{hosts} hosts")

    def test_only_the_large_rows_count(self):
        # The 1 MiB row, twice as slow, must not move the bandwidth.
        got = model_validation.check_bandwidth(FIT, log_with_check(4, 300e6, skew=(2.0, 1.0, 1.0)))
        self.assertAlmostEqual(got / 300e6, 1.0, delta=2e-4)

    def test_a_log_without_a_check_is_refused(self):
        with self.assertRaises(SystemExit):
            model_validation.check_bandwidth(FIT, "# between nodes: latency 20.0 us\n")

    def test_a_fit_without_a_link_is_refused(self):
        with self.assertRaises(SystemExit):
            model_validation.check_bandwidth("network:\n  reduce_bandwidth: 10GB/s\n", log_with_check(2, 300e6))

    def test_a_latency_in_milliseconds_is_read_as_such(self):
        fit = FIT.replace("latency: 20.0us", "latency: 0.02ms")
        got = model_validation.check_bandwidth(fit, log_with_check(4, 300e6))
        self.assertAlmostEqual(got / 300e6, 1.0, delta=2e-4)

    def test_the_rewritten_fit_carries_it_and_nothing_else_changes(self):
        with tempfile.TemporaryDirectory() as d:
            fit, log, into = os.path.join(d, "fit-2.5gbit-N4.yml"), os.path.join(d, "fit-2.5gbit-N4.log"), \
                os.path.join(d, "out")
            os.mkdir(into)
            with open(fit, "w", encoding="utf-8") as f:
                f.write(FIT)
            with open(log, "w", encoding="utf-8") as f:
                f.write(log_with_check(4, 300e6))
            with open(model_validation.with_check_bandwidth(fit, log, into), encoding="utf-8") as f:
                text = f.read()
            self.assertIn("nodes_link: {bandwidth: 0.3000GB/s, latency: 20.0us}", text)
            self.assertEqual(text.replace("0.3000GB/s", "0.2772GB/s"), FIT)


if __name__ == "__main__":
    unittest.main()
