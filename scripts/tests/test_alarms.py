"""The stack's alarms as CloudWatch takes them, checked on the SAM transform's output: an alarm on
metric math reads at most ten metrics (a hard limit, "Limits that apply to alarms based on metric
math expressions", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html),
each id its expression names is one of its metrics, and the throttling alarm reads what the
functions count (adapters/dynamo/metered.rs's DynamoThrottles) beside the table's own counts."""

import logging
import os
import pathlib
import re
import sys
import unittest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

try:  # needs samtranslator: only in .local/venv
    import transform
    from samtranslator.yaml_helper import yaml_parse
except ImportError:
    transform = None


def alarms():
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    template = yaml_parse((ROOT / "template.yaml").read_text())
    output = transform.transform(transform.packaged(template), {}, transform.NoManagedPolicies())
    return {
        name: resource["Properties"]
        for name, resource in output["Resources"].items()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
    }


def expression_text(query):
    """A query's expression as written, a `Fn::Sub`'s string with its `${...}` left out."""
    expression = query.get("Expression", "")
    if isinstance(expression, dict):
        expression = expression["Fn::Sub"]
        expression = expression[0] if isinstance(expression, list) else expression
    return re.sub(r"\$\{[^}]*\}", "", expression)


@unittest.skipIf(transform is None, "needs .local/venv (samtranslator)")
class MetricMathAlarms(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.alarms = alarms()

    def test_each_reads_at_most_ten_metrics_and_names_only_its_own(self):
        for name, alarm in self.alarms.items():
            queries = alarm.get("Metrics")
            if not queries:
                continue
            with self.subTest(alarm=name):
                stats = [query for query in queries if "MetricStat" in query]
                self.assertLessEqual(len(stats), 10)
                ids = {query["Id"] for query in queries}
                returned = [query for query in queries if query.get("ReturnData")]
                self.assertEqual(len(returned), 1)
                for query in queries:
                    for named in re.findall(r"\b[a-z][A-Za-z0-9_]*\b", expression_text(query)):
                        if named not in ("FILL", "SUM", "IF", "MAX", "MIN"):
                            self.assertIn(named, ids, query["Expression"])

    def test_the_throttling_alarm_reads_what_the_functions_met(self):
        queries = self.alarms["DynamoThrottlesAlarm"]["Metrics"]
        met = {
            query["MetricStat"]["Metric"]["Dimensions"][0]["Value"]
            for query in queries
            if "MetricStat" in query and query["MetricStat"]["Metric"]["MetricName"] == "DynamoThrottles"
        }
        self.assertEqual(met, {"send", "grab", "settle", "query"})
        expression = next(expression_text(query) for query in queries if query.get("ReturnData"))
        for query in queries:
            if "MetricStat" in query:
                self.assertIn(query["Id"], expression)


if __name__ == "__main__":
    unittest.main()
