"""scripts/console_alarm.py: the us-east-1 stack that carries the console distribution's 5xx
alarm for a stack in another Region holds template.yaml's Console5xxAlarm itself (the same
properties, the distribution a parameter), notifying a topic declared as the stack's, is cfn-lint
clean, pages for the distribution it is given (scripts/entry_point_alarms.py), and is deployable
by the deploying identity's policy (scripts/deploy_policy.py)."""

import copy
import json
import os
import pathlib
import sys
import unittest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import cfn  # noqa: E402
import console_alarm  # noqa: E402
import entry_point_alarms  # noqa: E402
import iam  # noqa: E402

try:  # needs samtranslator and cfn-lint: only in .local/venv
    import deploy_policy
    import transform
except ImportError:
    transform = None

DISTRIBUTION = "E2QWRUHAPOMQZL"


@unittest.skipIf(transform is None, "needs .local/venv (samtranslator, cfn-lint)")
class ConsoleAlarmStack(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        cls.source = console_alarm.source_template()
        cls.template = console_alarm.alarm_template(cls.source)

    def test_it_is_template_yamls_alarm_on_the_distribution_it_is_given(self):
        declared = copy.deepcopy(self.source["Resources"][console_alarm.ALARM])
        self.assertEqual(declared.pop("Condition"), "CloudFrontMetricsHere")
        carried = self.template["Resources"][console_alarm.ALARM]
        dimensions = carried["Properties"]["Dimensions"]
        self.assertIn({"Name": "DistributionId", "Value": {"Ref": "ConsoleDistributionId"}}, dimensions)
        self.assertEqual(json.dumps(carried).replace('"ConsoleDistributionId"', '"ConsoleDistribution"'), json.dumps(declared))
        self.assertEqual(self.template["Resources"]["AlarmTopic"], self.source["Resources"]["AlarmTopic"])

    def test_it_pages_for_the_distribution_in_us_east_1(self):
        stack = cfn.Stack(self.template, {"ConsoleDistributionId": DISTRIBUTION, "AlarmEmail": "ops@example.com"})
        watched = list(entry_point_alarms.watched(stack))
        self.assertEqual(watched, [(console_alarm.ALARM, "AWS/CloudFront", "5xxErrorRate",
                                    {"DistributionId": DISTRIBUTION, "Region": "Global"})])
        self.assertEqual(stack.properties("AlarmTopic")["Subscription"], [{"Protocol": "email", "Endpoint": "ops@example.com"}])

    def test_cfn_lint_clean(self):
        self.assertEqual(transform.lint_problems(json.dumps(self.template)), [])

    def test_the_deploying_policy_deploys_it(self):
        policy, _ = deploy_policy.derive()
        self.assertEqual(deploy_policy.uncovered(policy, self.template), [])
        name = console_alarm.stack_name("red-packets", "eu-west-1")
        arn = f"arn:aws:cloudformation:us-east-1:123456789012:stack/{name}/0f1e2d3c"
        for action in ("cloudformation:DescribeStacks", "cloudformation:CreateChangeSet",
                       "cloudformation:DescribeChangeSet", "cloudformation:ExecuteChangeSet"):
            self.assertEqual(iam.decide(policy["Statement"], action, arn), iam.ALLOW, action)


if __name__ == "__main__":
    unittest.main()
