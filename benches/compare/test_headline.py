"""What BENCHMARKS.md relies on headline.py for: every figure from the one
file given, a mixed file refused, missing runners named, verdicts per S,
and only the generated part of the page rewritten.

    python3 -m unittest discover -s benches/compare -p 'test_*.py'
"""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import headline  # noqa: E402

MIB = headline.MIB
META = {
    "date": "2026-12-06T17:16Z",
    "commit": "829ed0e59cf0a826a937c17b3eec4f86af56d71a",
    "cpu": "Test CPU",
    "nproc": "2",
    "memory": "23Gi",
    "kernel": "6.18",
    "rustc": "rustc 1.95.0",
    "go": "go1.26.8",
    "kube_runtime": "5.0.0",
    "client_go": "v0.34.13",
    "load_before": "1.0 1.0 1.0",
    "load_after": "1.0 1.0 1.0",
}


def run(runner, eps, strip=False, subscribers=1, variant="burst", objects=1000, **extra):
    """One runner's JSON line, with figures derived from `eps` so that each
    runner's cells differ."""
    line = {
        "runner": runner,
        "variant": variant,
        "strip": strip,
        "subscribers": subscribers,
        "objects": objects,
        "updates": 2000,
        "deletes": 100,
        "mean_pod_bytes": 3800.0,
        "events_per_second": eps,
        "seconds": 3100 / eps,
        "cpu_us_per_event": 1e6 / eps,
        "sync_seconds": 1000 / eps,
        "rss_before": 10 * MIB,
        "rss_after_sync": 10 * MIB + 1000 * objects * 1000 / eps,
        "bytes_per_object": 1000 * 1000 / eps,
        "peak_rss": 20 * MIB + 1000 * objects * 1000 / eps,
        "load_average": "1.2 1.0 1.0",
    }
    if runner.startswith("ours") or runner == "kube-runtime":
        line.update(allocator="system", chunking="backlog")
    line.update(extra)
    return line


def full_pass(skip=()):
    runs = []
    for subscribers in (1, 4):
        for strip in (False, True):
            for index, runner in enumerate(headline.RUNNERS):
                if runner in skip:
                    continue
                # Two runs per cell: the table must show their median.
                runs.append(run(runner, 1000 * (index + 1), strip, subscribers))
                runs.append(run(runner, 1000 * (index + 1) + 200, strip, subscribers))
    runs.append(run("ours", 5000, variant="relist", peak_rss=10 * MIB + 110 * MIB, rss_after_sync=10 * MIB + 100 * MIB))
    return runs


class Headline(unittest.TestCase):
    def test_refuses_a_file_that_mixes_workloads(self):
        runs = full_pass() + [run("ours", 1000, objects=2000)]
        with self.assertRaises(headline.NotOnePass):
            headline.Pass(runs)

    def test_refuses_a_file_that_mixes_allocators(self):
        runs = full_pass() + [run("ours", 1000, allocator="mimalloc")]
        with self.assertRaises(headline.NotOnePass):
            headline.Pass(runs)

    def test_table_shows_the_median_of_each_cell_and_its_ratio_to_kube_runtime(self):
        page = headline.markdown(headline.Pass(full_pass()), META, "headline.svg")
        ours = 1000 * (headline.RUNNERS.index("ours") + 1) + 100
        reference = 1000 * (headline.RUNNERS.index("kube-runtime") + 1) + 100
        row = next(line for line in page.split("\n") if line.startswith("| kube-informer, default |"))
        self.assertIn(f"{ours:,} ({ours / reference:.2f}×)", row)

    def test_names_the_runners_a_pass_lacks(self):
        page = headline.markdown(headline.Pass(full_pass(skip={"client-go-protobuf"})), META, "headline.svg")
        self.assertIn("**Not in this pass**: client-go informer, protobuf (`client-go-protobuf`)", page)
        row = next(line for line in page.split("\n") if line.startswith("| client-go informer, protobuf |"))
        self.assertIn("not in this pass", row)
        complete = headline.markdown(headline.Pass(full_pass()), META, "headline.svg")
        self.assertNotIn("Not in this pass", complete)

    def test_verdict_says_at_which_s_a_target_is_missed(self):
        self.assertEqual(headline.verdict([(1, ("", True)), (4, ("", True))]), "**met**")
        self.assertEqual(headline.verdict([(1, ("", False)), (4, ("", True))]), "**missed** at S = 1")
        self.assertEqual(headline.verdict([(1, ("", False)), (4, ("", False))]), "**missed**")
        self.assertEqual(headline.verdict([(1, None), (4, None)]), "not measured")

    def test_relist_target_compares_the_peak_with_the_store(self):
        page = headline.targets(headline.Pass(full_pass()))
        self.assertIn("peak 110 MiB vs store 100 MiB: 1.10× | – | **met**", page)

    def test_splice_replaces_only_the_generated_part(self):
        page = f"# Title\n\nby hand\n\n{headline.HEADLINE_START}\nold\n{headline.HEADLINE_END}\n\nafter\n"
        block = f"{headline.HEADLINE_START}\nnew\n{headline.HEADLINE_END}"
        self.assertEqual(headline.splice(page, block), f"# Title\n\nby hand\n\n{block}\n\nafter\n")
        with self.assertRaises(ValueError):
            headline.splice("# no markers\n", block)

    def test_chart_labels_every_bar_with_its_figure_and_ratio(self):
        measured = headline.Pass(full_pass(skip={"client-go-protobuf"}))
        chart = headline.svg(measured, META)
        self.assertTrue(chart.startswith("<svg") and chart.rstrip().endswith("</svg>"))
        reference = 1000 * (headline.RUNNERS.index("kube-runtime") + 1) + 100
        ours = 1000 * (headline.RUNNERS.index("ours") + 1) + 100
        self.assertIn(f"{ours:,}/s · {ours / reference:.2f}×", chart)
        self.assertIn("not in this pass", chart)
        bars = chart.count("<rect") - 1 - len(headline.CHART) - (len(headline.ROWS) + 1) // 2
        self.assertEqual(bars, (len(headline.ROWS) - 1) * len(headline.CHART))


if __name__ == "__main__":
    unittest.main()
