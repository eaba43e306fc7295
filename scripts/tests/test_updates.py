"""scripts/updates.py on template.yaml and on templates changed to break it: a parameter a version's
description leaves out is named with its function, one it names in vain too; every description
fits Lambda's 256 characters at the parameters' longest values; a data holder a change replaces
must be in docs/DEPLOY.md's table, and every data holder keeps its policies. The whole check (every
parameter of every parameter set, and the table) runs as scripts/updates.py in `make test`; these
run one parameter set and one parameter each.
"""

import copy
import logging
import os
import pathlib
import re
import sys
import unittest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

try:  # needs samtranslator and cfn-lint's resource schemas: only in .local/venv
    import deploy_policy
    import transform
    import updates
    from samtranslator.yaml_helper import yaml_parse
except ImportError:
    updates = None
if updates is not None and not (deploy_policy.schema_dir() / "providers" / "us-east-1.json").is_file():
    updates = None

DEFAULTS = {"defaults": {}}


def source():
    return yaml_parse((ROOT / "template.yaml").read_text())


def described(template, function, edit):
    """`template` with `edit` applied to the text of `function`'s VersionDescription."""
    template = copy.deepcopy(template)
    properties = template["Resources"][function]["Properties"]
    description = properties["VersionDescription"]
    properties["VersionDescription"] = {"Fn::Sub": edit(description["Fn::Sub"])}
    return template


@unittest.skipIf(updates is None, "needs .local/venv (samtranslator, cfn-lint)")
class VersionDescriptions(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        logging.getLogger("samtranslator").setLevel(logging.ERROR)
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        cls.source = source()

    def test_a_parameter_left_out_of_a_description_is_named_with_its_function(self):
        mutated = described(self.source, "SendFunction", lambda text: text.replace("${UserGrabLimit} ", ""))
        findings = updates.run(mutated, DEFAULTS, ["UserGrabLimit"])
        self.assertEqual(findings.stale, {("UserGrabLimit", "SendFunction")})
        self.assertTrue(any("UserGrabLimit" in f and "SendFunction" in f and updates.STALE in f for f in findings.failures), findings.failures)
        self.assertEqual(updates.run(self.source, DEFAULTS, ["UserGrabLimit"]).failures, [])

    def test_a_parameter_a_description_names_in_vain_is_named(self):
        mutated = described(self.source, "SendFunction", lambda text: text + " ${GrabMaxConcurrency}")
        findings = updates.run(mutated, DEFAULTS, ["GrabMaxConcurrency"])
        self.assertTrue(any("SendFunction" in f and updates.UNCHANGED in f for f in findings.failures), findings.failures)

    def test_every_description_fits_at_the_longest_values(self):
        self.assertEqual(updates.description_failures(self.source), [])
        longest = {}
        for name, declared in self.source["Parameters"].items():
            length = updates.longest_value(declared)
            longest[name] = "9" * updates.UNBOUNDED_DIGITS if length is None and declared.get("Type") == "Number" else "x" * (length or 0)
        output = transform.transform(transform.packaged(self.source), {}, transform.NoManagedPolicies())
        stack = updates.Resolved(output, longest)
        versions = stack.created("AWS::Lambda::Version")
        self.assertTrue(versions)
        for version in versions:
            with self.subTest(version=version):
                self.assertLessEqual(len(stack.properties(version)["Description"]), updates.DESCRIPTION_LIMIT)

    def test_the_translator_is_run_again_only_for_what_it_reads(self):
        packaged = transform.packaged(self.source)
        output, reads = updates.translated(packaged, {})
        self.assertIn("DeploymentType", reads)
        self.assertNotEqual(updates.translated(packaged, {"DeploymentType": "AllAtOnce"})[0], output)
        self.assertNotIn("MaxTotalCents", reads)
        self.assertEqual(updates.translated(packaged, {"MaxTotalCents": "1"})[0], output)


@unittest.skipIf(updates is None, "needs .local/venv (samtranslator, cfn-lint)")
class DataHolders(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        logging.getLogger("samtranslator").setLevel(logging.ERROR)
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        cls.source = source()
        cls.stage = updates.run(cls.source, DEFAULTS, ["Stage"])

    def test_a_data_holder_a_change_replaces_must_be_in_the_table(self):
        self.assertIn("ServerlessCache", self.stage.data_lost["Stage"])
        document = (ROOT / "docs" / "DEPLOY.md").read_text()
        self.assertEqual(updates.data_loss_failures(self.stage, document), [])
        unsaid = re.sub(r"\*\*`ServerlessCache`\*\*", "`ServerlessCache`", document)
        self.assertEqual(len(updates.data_loss_failures(self.stage, unsaid)), 1)

    def test_every_data_holder_keeps_its_policies(self):
        output = transform.transform(transform.packaged(self.source), {}, transform.NoManagedPolicies())
        self.assertEqual(updates.policy_failures(output), [])
        del output["Resources"]["MembershipKeys"]["DeletionPolicy"]
        self.assertEqual(updates.policy_failures(output), ["MembershipKeys: holds data or identities and has no DeletionPolicy"])


@unittest.skipIf(updates is None, "needs .local/venv (samtranslator, cfn-lint)")
class ParameterValues(unittest.TestCase):
    def test_the_examples_of_each_pattern_match_it(self):
        for name, declared in source()["Parameters"].items():
            if "AllowedPattern" in declared:
                with self.subTest(parameter=name):
                    for example in updates.pattern_examples(declared["AllowedPattern"]):
                        self.assertRegex(example, "^(?:" + declared["AllowedPattern"] + ")$")

    def test_the_longest_match_of_a_pattern(self):
        self.assertEqual(updates.longest_match("^[a-z0-9-]{1,16}$"), 16)
        self.assertEqual(updates.longest_match("^(https://x/)?$"), 10)
        self.assertIsNone(updates.longest_match("^[A-Za-z][A-Za-z0-9_+/-]*$"))


if __name__ == "__main__":
    unittest.main()
