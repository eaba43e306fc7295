"""scripts/capacity.py: docs/CAPACITY.md holds the tables the committed bench figures compute,
and the arithmetic behind them."""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import capacity  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent


class CapacityTables(unittest.TestCase):
    def test_capacity_md_holds_what_the_committed_figures_compute(self):
        document = (ROOT / "docs" / "CAPACITY.md").read_text()
        expected = capacity.replaced(document, capacity.tables(capacity.load_figures(ROOT)))
        self.assertEqual(document, expected, "run: python3 scripts/capacity.py --write docs/CAPACITY.md")

    def test_loads_follow_the_rates(self):
        figures = {"send_wru": 10.0, "grab_wru": 5.0, "redis_us_per_grab": 1.64, "send_seconds": 0.05,
                   "partition_ceiling": 900, "units_per_share": 2.0, "risk_seconds": 0.004, "risk_wru": 1.5}
        load = capacity.loads(figures, sends=100, grabs=1_000)
        self.assertEqual(load["dynamodb_table"], 100 * 10 + 1_000 * (5 + 1.5), "the risk function's writes included")
        self.assertAlmostEqual(load["ecpu_slot"], 1_000 * 1.64 / capacity.ASSUMPTIONS["engine_us_per_ecpu"])
        self.assertAlmostEqual(load["lambda"], 1_000 * capacity.ASSUMPTIONS["grab_seconds"] + 100 * 0.05 + 1_000 * 0.004)
        self.assertEqual(load["dynamodb_partition"], 900, "the partition gets settle's ceiling, whatever the rate")
        doubled = capacity.loads(figures, sends=200, grabs=2_000)
        self.assertAlmostEqual(capacity.cost_per_hour(figures, 200, 2_000), 2 * capacity.cost_per_hour(figures, 100, 1_000))
        self.assertAlmostEqual(doubled["api"], 2 * load["api"])


if __name__ == "__main__":
    unittest.main()
