"""scripts/deploy_policy.py: the deploying identity's policy holds every resource type's handler
actions for every parameter set's transform, passes every role the template gives a service and
the capacity provider, and docs/DEPLOY.md holds what the script derives now.

Runs in the SAM CLI virtualenv (samtranslator, cfn-lint, samcli):
.local/venv/bin/python -m unittest scripts/tests/test_deploy_policy.py
"""

import copy
import json
import os
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import deploy_policy  # noqa: E402
import iam  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
ACCOUNT = "123456789012"


class DeployPolicy(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.source, cls.templates = deploy_policy.templates()
        cls.policy, cls.facts = deploy_policy.derive((cls.source, cls.templates))
        cls.statements = cls.policy["Statement"]

    def allowed(self, action, arn, statements=None):
        return iam.decide(statements or self.statements, action, arn) == iam.ALLOW

    def test_every_type_of_every_parameter_set_is_covered(self):
        self.assertIn("managed-grab", self.templates)
        for name, template in self.templates.items():
            with self.subTest(parameter_set=name):
                self.assertEqual(deploy_policy.uncovered(self.policy, template), [])

    def test_deploy_md_holds_what_the_script_derives(self):
        document = (ROOT / "docs" / "DEPLOY.md").read_text()
        expected = deploy_policy.replaced(document, deploy_policy.block(self.policy, self.facts))
        self.assertEqual(document, expected, "run: .local/venv/bin/python scripts/deploy_policy.py --write docs/DEPLOY.md")

    def test_pass_role_covers_every_role_a_service_is_given(self):
        given = set()
        for name, template in self.templates.items():
            resources = template["Resources"]
            for resource, path, role in deploy_policy.role_references(template):
                where = f"[{name}] {resource}.{'.'.join(map(str, path))}"
                self.assertIsNotNone(role, f"{where} names a role not of the stack")
                self.assertEqual(resources[role]["Type"], "AWS::IAM::Role", where)
                self.assertNotIn("RoleName", resources[role]["Properties"], f"{role}: a named role is not `<stack>-<id>-<suffix>`")
                self.assertTrue(self.allowed("iam:PassRole", deploy_policy.role_arn(role)), f"{where}: {role} cannot be passed")
                given.add((resources[resource]["Type"], [p for p in path if isinstance(p, str)][-1]))
        # The kinds of properties the brief names: functions, the Pipe, schedules, the capacity
        # provider's operator role, CodeDeploy's and the webhook rule's.
        for expected in [("AWS::Lambda::Function", "Role"), ("AWS::Pipes::Pipe", "RoleArn"),
                         ("AWS::Scheduler::Schedule", "RoleArn"),
                         ("AWS::Lambda::CapacityProvider", "CapacityProviderOperatorRoleArn"),
                         ("AWS::CodeDeploy::DeploymentGroup", "ServiceRoleArn"), ("AWS::Events::Rule", "RoleArn")]:
            self.assertIn(expected, given)
        self.assertFalse(self.allowed("iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/Admin"), "PassRole beyond the stack's roles")

    def test_pass_capacity_provider_where_a_set_has_one(self):
        sets = [name for name, template in self.templates.items()
                if "AWS::Lambda::CapacityProvider" in deploy_policy.resource_types(template)]
        self.assertTrue(sets, "no parameter set has a capacity provider")
        for name in sets:
            for provider in self.templates[name]["Resources"].values():
                if provider["Type"] != "AWS::Lambda::CapacityProvider":
                    continue
                named = provider["Properties"].get("CapacityProviderName")
                # The name it gets with the default Stage, or one CloudFormation makes up.
                text = deploy_policy.literal_prefix(named) + "prod-grab" if named else "red-packets-GrabCapacityProvider-1A2B3C"
                arn = f"arn:aws:lambda:us-east-1:{ACCOUNT}:capacity-provider:{text}"
                self.assertTrue(self.allowed("lambda:PassCapacityProvider", arn), f"[{name}] {arn}")
        if deploy_policy.capacity_providers_named(self.templates):
            self.assertFalse(self.allowed("lambda:PassCapacityProvider", f"arn:aws:lambda:us-east-1:{ACCOUNT}:capacity-provider:shared"))

    def test_cloudformation_on_the_stacks_and_the_transform(self):
        stack = f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/red-packets/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
        managed = f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/aws-sam-cli-managed-default/0f1e2d3c"
        for action in deploy_policy.SAM_DEPLOY_CALLS:
            self.assertTrue(self.allowed(action, stack), action)
            self.assertTrue(self.allowed(action, managed), action)
            self.assertFalse(self.allowed(action, stack.replace("red-packets", "payroll")), action)
        self.assertTrue(self.allowed("cloudformation:CreateChangeSet",
                                     "arn:aws:cloudformation:eu-west-1:aws:transform/Serverless-2016-10-31"))
        for action in ["s3:PutObject", "s3:GetObject"]:
            self.assertTrue(self.allowed(action, "arn:aws:s3:::aws-sam-cli-managed-default-samclisourcebucket-1x2y3z/red-packets/abc.template"))
        self.assertFalse(self.allowed("s3:PutObject", "arn:aws:s3:::someone-elses-bucket/key"))

    def test_sam_cli_makes_the_calls_the_policy_grants(self):
        """Each CloudFormation action is a call (or a waiter's, or a paginator's) in SAM CLI's deployer."""
        import samcli.lib.deploy.deployer as deployer

        text = Path(deployer.__file__).read_text()
        for action in deploy_policy.SAM_DEPLOY_CALLS:
            call = re.sub(r"(?<!^)(?=[A-Z])", "_", action.split(":")[1]).lower()
            waiters = {"describe_change_set": "change_set_create_complete", "describe_stacks": "stack_create_complete"}
            self.assertTrue(f"{call}(" in text or f'"{call}"' in text or waiters.get(call, "~") in text, action)

    def test_the_policy_is_well_formed(self):
        sids = [s["Sid"] for s in self.statements]
        self.assertEqual(len(sids), len(set(sids)))
        self.assertTrue(all(re.fullmatch(r"[A-Za-z0-9]+", sid) for sid in sids), sids)
        self.assertTrue(all(s["Effect"] == "Allow" and "Condition" not in s for s in self.statements))
        for action in deploy_policy.policy_actions(self.policy):
            self.assertRegex(action, deploy_policy.ACTION_NAME)

    def test_split_into_managed_policies_keeps_every_grant(self):
        parts = deploy_policy.split(self.policy)
        self.assertGreater(len(parts), 1)
        for part in parts:
            self.assertLessEqual(deploy_policy.size(part), deploy_policy.MANAGED_POLICY_LIMIT)
        granted = {g for s in self.statements for g in iam.grants(s)}
        self.assertEqual({g for part in parts for s in part["Statement"] for g in iam.grants(s)}, granted)

    def test_a_type_the_policy_does_not_cover_is_named(self):
        template = {"Resources": {"Queue": {"Type": "AWS::SQS::Queue"}, "Stream": {"Type": "AWS::Kinesis::Stream"},
                                  "Made": {"Type": "AWS::Made::Up"}}}
        problems = deploy_policy.uncovered(self.policy, template)
        self.assertEqual(len(problems), 2, problems)
        self.assertTrue(problems[0].startswith("AWS::Kinesis::Stream: "), problems)
        self.assertIn("kinesis:CreateStream", problems[0])
        self.assertTrue(problems[1].startswith("AWS::Made::Up: no handlers"), problems)
        # The same template's types, once in the policy, are covered.
        policy = copy.deepcopy(self.policy)
        policy["Statement"].append({"Sid": "Kinesis", "Effect": "Allow", "Action": ["kinesis:*"], "Resource": "*"})
        self.assertEqual(deploy_policy.uncovered(policy, {"Resources": {"S": {"Type": "AWS::Kinesis::Stream"}}}), [])

    def test_a_role_not_of_the_stack_is_refused(self):
        template = copy.deepcopy(self.templates["defaults"])
        template["Resources"]["EventsPipe"]["Properties"]["RoleArn"] = f"arn:aws:iam::{ACCOUNT}:role/shared-pipes"
        with self.assertRaisesRegex(ValueError, r"EventsPipe\.RoleArn names a role not of the stack"):
            deploy_policy.passed_roles({"mutated": template})


if __name__ == "__main__":
    unittest.main()
