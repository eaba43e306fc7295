"""The capacity provider's system logs reach its log group (scripts/transform.py's
check_capacity_provider_logs on the managed-grab transform): the operator role it is given allows
the actions Lambda's documentation names on that group, and the check names the role and the
action when a statement, an action or the group is taken away."""

import copy
import logging
import os
import pathlib
import sys
import unittest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import cfn  # noqa: E402

try:  # needs samtranslator: only in .local/venv
    import transform
    from samtranslator.yaml_helper import yaml_parse
except ImportError:
    transform = None

ROLE, GROUP = "GrabCapacityProviderOperatorRole", "GrabCapacityProviderLogGroup"


@unittest.skipIf(transform is None, "needs .local/venv (samtranslator)")
class CapacityProviderLogs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        logging.getLogger("samtranslator").setLevel(logging.ERROR)
        template = yaml_parse((HERE.parent.parent / "template.yaml").read_text())
        cls.parameters = transform.PARAMETER_SETS["managed-grab"]
        cls.output = transform.transform(transform.packaged(template), cls.parameters, transform.NoManagedPolicies())

    def problems(self, output):
        return transform.check_capacity_provider_logs(cfn.Stack(output, self.parameters))

    def statements(self, output):
        return output["Resources"][ROLE]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"]

    def test_the_provider_is_given_the_role_and_it_allows_every_documented_action(self):
        provider = self.output["Resources"]["GrabCapacityProvider"]["Properties"]
        self.assertEqual(provider["PermissionsConfig"]["CapacityProviderOperatorRoleArn"], {"Fn::GetAtt": [ROLE, "Arn"]})
        self.assertEqual(self.problems(self.output), [])
        # The managed policy's EC2 actions stay.
        self.assertIn("AWSLambdaManagedEC2ResourceOperator", str(self.output["Resources"][ROLE]["Properties"]["ManagedPolicyArns"]))

    def test_without_its_logs_statement_each_action_is_named(self):
        changed = copy.deepcopy(self.output)
        del changed["Resources"][ROLE]["Properties"]["Policies"]
        problems = self.problems(changed)
        self.assertEqual(len(problems), len(transform.CAPACITY_PROVIDER_LOG_ACTIONS), problems)
        for action, problem in zip(transform.CAPACITY_PROVIDER_LOG_ACTIONS, problems):
            self.assertIn(f"{ROLE} does not allow {action}", problem)

    def test_an_action_missing_or_another_group_is_named(self):
        for action in ("logs:CreateLogStream", "logs:PutLogEvents"):
            with self.subTest(without=action):
                changed = copy.deepcopy(self.output)
                statement = self.statements(changed)[0]
                statement["Action"] = [listed for listed in statement["Action"] if listed != action]
                (problem,) = self.problems(changed)
                self.assertIn(f"does not allow {action} on ", problem)
                self.assertIn(":log-stream:red-packets-prod-grab/managed-instances", problem)
        elsewhere = copy.deepcopy(self.output)
        self.statements(elsewhere)[0]["Resource"] = {"Fn::GetAtt": ["ApiAccessLogs", "Arn"]}
        self.assertEqual(len(self.problems(elsewhere)), 3)

    def test_a_provider_writing_to_a_group_the_stack_does_not_make_is_named(self):
        changed = copy.deepcopy(self.output)
        del changed["Resources"][GROUP]
        changed["Resources"][ROLE]["Properties"]["Policies"][0]["PolicyDocument"]["Statement"][0]["Resource"] = "*"
        (problem,) = self.problems(changed)
        self.assertIn("writes its logs to /aws/lambda/capacity-provider/red-packets-prod-grab", problem)


if __name__ == "__main__":
    unittest.main()
