"""scripts/built_artifacts.py: the artifact mapping `make verify-build` runs, on a fixture of the
built template (fixtures/built-template.yaml, the shape SAM CLI writes), without an arm64 build.

Run by `make test`: .local/venv/bin/python -m unittest discover -s scripts/tests
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SCRIPTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(SCRIPTS)
sys.path.insert(0, SCRIPTS)

import built_artifacts  # noqa: E402

FIXTURE = os.path.join(SCRIPTS, "tests", "fixtures", "built-template.yaml")
MODULE = os.path.join(SCRIPTS, "built_artifacts.py")
BINARIES = {"send", "grab", "query", "settle", "funds", "operator", "risk"}
# What a rebuild with --cached and a valid cache writes instead (SAM links .aws-sam/build/<dir> to
# .aws-sam/cache/<uuid> and update_template resolves the link): seen from SAM CLI 1.170.0.
CACHED_GRAB = "../cache/2279c23c-07df-4a8f-9582-cb77dd91d474"


class BuildTree:
    """A project directory with .aws-sam/build/template.yaml (the fixture, perhaps rewritten)
    and an executable bootstrap at every CodeUri it names."""

    def __init__(self, text=None, replace=()):
        self.root = tempfile.mkdtemp(prefix="built-artifacts-")
        self.build = os.path.join(self.root, ".aws-sam", "build")
        os.makedirs(self.build)
        with open(FIXTURE, encoding="utf-8") as file:
            text = file.read() if text is None else text
        for old, new in replace:
            text = text.replace(old, new)
        self.template = os.path.join(self.build, "template.yaml")
        with open(self.template, "w", encoding="utf-8") as file:
            file.write(text)
        template = built_artifacts.load_template(self.template)
        for function in built_artifacts.functions(template, self.template):
            self.put(function.bootstrap)

    def put(self, bootstrap, mode=0o755):
        os.makedirs(os.path.dirname(bootstrap), exist_ok=True)
        with open(bootstrap, "w") as file:
            file.write("#!/bin/sh\n")
        os.chmod(bootstrap, mode)

    def path(self, *parts):
        return os.path.normpath(os.path.join(self.build, *parts))

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)


def mapping(tree, **overrides):
    return [(f.logical_id, f.binary, f.bootstrap) for f in built_artifacts.artifacts(tree.template, overrides)]


def verify_build_events():
    """The binaries scripts/verify-build.sh has sample events for: its `declare -A events` (the
    events of no app route), and the app routes' events by the function serving each
    (built_artifacts.route_events, on the repository's template.yaml and events/)."""
    with open(os.path.join(SCRIPTS, "verify-build.sh"), encoding="utf-8") as file:
        script = file.read()
    block = re.search(r"declare -A events=\((.*?)\n\)", script, re.S)
    declared = set(re.findall(r"\[([a-z-]+)\]=", block.group(1)))
    routes = built_artifacts.route_events(os.path.join(ROOT, "template.yaml"), os.path.join(ROOT, "events"))
    return declared | {binary for binary, _ in routes}, script


class FixtureMapping(unittest.TestCase):
    def setUp(self):
        self.tree = BuildTree()
        self.addCleanup(self.tree.close)

    def test_each_grab_compute_runs_every_binary_once_grab_through_the_shared_artifact(self):
        shared = self.tree.path("GrabFunction-Shared", "bootstrap")
        expected_grab = {"lambda": "GrabFunction", "managed-instances": "GrabManagedFunction"}
        for compute, grab_function in expected_grab.items():
            with self.subTest(GrabCompute=compute):
                runs = mapping(self.tree, GrabCompute=compute)
                self.assertEqual(sorted(binary for _, binary, _ in runs), sorted(BINARIES))
                self.assertEqual(
                    runs,
                    [
                        ("SendFunction", "send", self.tree.path("SendFunction", "bootstrap")),
                        (grab_function, "grab", shared),
                        ("QueryFunction", "query", self.tree.path("QueryFunction", "bootstrap")),
                        ("SettleFunction", "settle", self.tree.path("SettleFunction", "bootstrap")),
                        ("FundsFunction", "funds", self.tree.path("FundsFunction", "bootstrap")),
                        ("OperatorFunction", "operator", self.tree.path("OperatorFunction", "bootstrap")),
                        ("RiskFunction", "risk", self.tree.path("RiskFunction", "bootstrap")),
                    ],
                )
                self.assertTrue(all(os.path.isabs(path) for _, _, path in runs))
        # The default (no override) is the template's: GrabCompute=lambda.
        self.assertEqual(mapping(self.tree), mapping(self.tree, GrabCompute="lambda"))
        # Neither grab function has a directory of its own: a guessed path finds nothing.
        self.assertFalse(os.path.exists(self.tree.path("GrabFunction")))
        self.assertFalse(os.path.exists(self.tree.path("GrabManagedFunction")))

    def test_the_binaries_are_those_verify_build_has_events_for(self):
        events, script = verify_build_events()
        self.assertEqual(events, BINARIES)
        for compute in ("lambda", "managed-instances"):
            with self.subTest(GrabCompute=compute):
                self.assertEqual({binary for _, binary, _ in mapping(self.tree, GrabCompute=compute)}, events)
        # verify-build and build take their paths from the module, and guess none.
        self.assertIn("scripts/built_artifacts.py", script)
        self.assertNotIn("Function/bootstrap", script)
        with open(os.path.join(SCRIPTS, "build.sh"), encoding="utf-8") as file:
            build = file.read()
        self.assertIn("scripts/built_artifacts.py --all", build)
        self.assertNotIn("*Function/bootstrap", build)

    def test_samconfig_deploy_parameters_are_accepted(self):
        # What verify-build passes by default: samconfig.toml's deploy parameter_overrides.
        overrides = built_artifacts.samconfig_overrides(os.path.join(ROOT, "samconfig.toml"))
        runs = mapping(self.tree, **overrides)
        self.assertEqual({binary for _, binary, _ in runs}, BINARIES)

    def test_all_lists_every_function_both_grabs_on_one_artifact(self):
        every = built_artifacts.artifacts(self.tree.template, every=True)
        self.assertEqual(
            [f.logical_id for f in every],
            ["SendFunction", "GrabFunction", "GrabManagedFunction", "QueryFunction", "SettleFunction", "FundsFunction",
             "OperatorFunction", "RiskFunction"],
        )
        grabs = {f.bootstrap for f in every if f.binary == "grab"}
        self.assertEqual(grabs, {self.tree.path("GrabFunction-Shared", "bootstrap")})

    def test_a_missing_bootstrap_fails_naming_its_functions(self):
        os.remove(self.tree.path("GrabFunction-Shared", "bootstrap"))
        for compute in ("lambda", "managed-instances"):
            with self.subTest(GrabCompute=compute):
                with self.assertRaises(built_artifacts.BuiltArtifactsError) as caught:
                    mapping(self.tree, GrabCompute=compute)
                message = str(caught.exception)
                self.assertIn("GrabFunction (grab)", message)
                self.assertIn("GrabManagedFunction (grab)", message)
                self.assertIn(self.tree.path("GrabFunction-Shared", "bootstrap") + " is missing", message)
                self.assertNotIn("SendFunction", message)

    def test_a_missing_bootstrap_of_one_function_names_it_alone(self):
        os.remove(self.tree.path("SendFunction", "bootstrap"))
        with self.assertRaises(built_artifacts.BuiltArtifactsError) as caught:
            mapping(self.tree)
        self.assertIn("SendFunction (send)", str(caught.exception))
        self.assertNotIn("Grab", str(caught.exception))

    def test_a_bootstrap_that_is_not_executable_fails(self):
        self.tree.put(self.tree.path("QueryFunction", "bootstrap"), mode=0o644)
        with self.assertRaises(built_artifacts.BuiltArtifactsError) as caught:
            mapping(self.tree)
        self.assertIn("QueryFunction (query)", str(caught.exception))
        self.assertIn("is not executable", str(caught.exception))

    def test_an_unknown_grab_compute_fails(self):
        with self.assertRaises(built_artifacts.BuiltArtifactsError) as caught:
            mapping(self.tree, GrabCompute="fargate")
        self.assertIn("GrabCompute=fargate is not one of lambda, managed-instances", str(caught.exception))

    def test_as_verify_build_runs_it(self):
        def run(*args):
            return subprocess.run(
                [sys.executable, MODULE, "--template", self.tree.template, *args],
                capture_output=True, text=True, check=False,
            )

        done = run("--parameter-overrides", "GrabCompute=managed-instances")
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = [line.split(" ", 2) for line in done.stdout.splitlines()]
        self.assertIn(["GrabManagedFunction", "grab", self.tree.path("GrabFunction-Shared", "bootstrap")], lines)
        self.assertEqual(len(lines), 7)

        os.remove(self.tree.path("FundsFunction", "bootstrap"))
        done = run()
        self.assertEqual(done.returncode, 2)
        self.assertEqual(done.stdout, "")
        self.assertIn("FundsFunction (funds)", done.stderr)
        self.assertIn("make build first", done.stderr)

        missing = run("--template", os.path.join(self.tree.root, "nothing.yaml"))
        self.assertEqual(missing.returncode, 2)
        self.assertIn("is missing: make build first", missing.stderr)


class OtherShapes(unittest.TestCase):
    def test_cached_rebuild_points_into_the_cache(self):
        tree = BuildTree(replace=[("CodeUri: GrabFunction-Shared", f"CodeUri: {CACHED_GRAB}")])
        self.addCleanup(tree.close)
        # .aws-sam/build/GrabFunction-Shared is then a link to the cache directory.
        os.symlink(tree.path(CACHED_GRAB), tree.path("GrabFunction-Shared"))
        for compute in ("lambda", "managed-instances"):
            with self.subTest(GrabCompute=compute):
                grabs = [path for _, binary, path in mapping(tree, GrabCompute=compute) if binary == "grab"]
                self.assertEqual(grabs, [os.path.join(tree.root, ".aws-sam", "cache", CACHED_GRAB[9:], "bootstrap")])

    def test_without_beta_features_each_grab_has_a_copy_and_the_deployed_one_runs(self):
        # Without BuildPerformance, DefaultBuildStrategy copies the shared build to each function's
        # own directory and the built template names each one.
        with open(FIXTURE, encoding="utf-8") as file:
            text = file.read()
        first = text.index("CodeUri: GrabFunction-Shared")
        second = text.index("CodeUri: GrabFunction-Shared", first + 1)
        text = (
            text[:first] + "CodeUri: GrabFunction" + text[first + len("CodeUri: GrabFunction-Shared"):second]
            + "CodeUri: GrabManagedFunction" + text[second + len("CodeUri: GrabFunction-Shared"):]
        )
        tree = BuildTree(text=text)
        self.addCleanup(tree.close)
        for compute, directory in (("lambda", "GrabFunction"), ("managed-instances", "GrabManagedFunction")):
            with self.subTest(GrabCompute=compute):
                runs = mapping(tree, GrabCompute=compute)
                self.assertEqual([path for _, b, path in runs if b == "grab"], [tree.path(directory, "bootstrap")])
        # The idle copy missing still fails: sam package uploads every function's.
        os.remove(tree.path("GrabManagedFunction", "bootstrap"))
        with self.assertRaises(built_artifacts.BuiltArtifactsError) as caught:
            mapping(tree, GrabCompute="lambda")
        self.assertIn("GrabManagedFunction (grab)", str(caught.exception))

    def test_short_form_tags_are_read(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as file:
            file.write(
                "AWSTemplateFormatVersion: 2010-09-09\nConditions:\n  Active: !Equals [!Ref P, x]\nResources:\n"
                "  F:\n    Type: AWS::Serverless::Function\n    Condition: Active\n"
                "    Metadata: {BuildProperties: {Binary: f}}\n"
                "    Properties:\n      CodeUri: F\n      Role: !GetAtt R.Arn\n"
                "      Environment: {Variables: {A: !Sub '${X}', B: !If [Active, !Ref Y, !Ref AWS::NoValue]}}\n"
            )
        self.addCleanup(os.remove, file.name)
        template = built_artifacts.load_template(file.name)
        self.assertEqual(template["AWSTemplateFormatVersion"], "2010-09-09")
        self.assertEqual(template["Conditions"]["Active"], {"Fn::Equals": [{"Ref": "P"}, "x"]})
        properties = template["Resources"]["F"]["Properties"]
        self.assertEqual(properties["Role"], {"Fn::GetAtt": ["R", "Arn"]})
        self.assertEqual(
            properties["Environment"]["Variables"],
            {"A": {"Fn::Sub": "${X}"}, "B": {"Fn::If": ["Active", {"Ref": "Y"}, {"Ref": "AWS::NoValue"}]}},
        )


def build_definition(resource, globals_function):
    """What SAM CLI's FunctionBuildDefinition.__eq__ compares (build_graph.py), for template.yaml."""
    properties = resource.get("Properties") or {}
    metadata = {k: v for k, v in (resource.get("Metadata") or {}).items() if k not in ("SamResourceId", "SamNormalized")}
    pick = lambda name: repr(properties.get(name, globals_function.get(name)))  # noqa: E731
    return (pick("CodeUri"), pick("Runtime"), pick("Architectures"), pick("Handler"), pick("PackageType"), repr(metadata))


class FixtureFollowsTemplate(unittest.TestCase):
    """fixtures/built-template.yaml is what sam build makes of today's template.yaml."""

    @classmethod
    def setUpClass(cls):
        cls.source = built_artifacts.load_template(os.path.join(ROOT, "template.yaml"))
        cls.built = built_artifacts.load_template(FIXTURE)

    def functions(self, template):
        return {
            name: resource
            for name, resource in template["Resources"].items()
            if resource.get("Type") == built_artifacts.SERVERLESS_FUNCTION
        }

    def test_every_function_of_the_template_is_in_the_fixture(self):
        source, built = self.functions(self.source), self.functions(self.built)
        self.assertEqual(list(built), list(source), "the fixture's functions (in order) are not template.yaml's")
        for name, resource in source.items():
            with self.subTest(function=name):
                self.assertEqual(built[name].get("Condition"), resource.get("Condition"))
                self.assertEqual(
                    built[name]["Metadata"]["BuildProperties"]["Binary"], resource["Metadata"]["BuildProperties"]["Binary"]
                )
                self.assertEqual(built[name]["Metadata"]["SamResourceId"], name)

    def test_the_conditions_and_parameters_the_functions_use_are_the_templates(self):
        for resource in self.functions(self.source).values():
            condition = resource.get("Condition")
            if condition:
                self.assertEqual(self.built["Conditions"][condition], self.source["Conditions"][condition])
        for name in ("GrabCompute",):
            self.assertEqual(self.built["Parameters"][name]["Default"], self.source["Parameters"][name]["Default"])
            self.assertEqual(
                self.built["Parameters"][name]["AllowedValues"], self.source["Parameters"][name]["AllowedValues"]
            )

    def test_functions_sharing_a_build_share_a_code_uri_as_sam_names_it(self):
        # SAM builds functions with equal build definitions once, into <first function>-Shared
        # (with --beta-features); every other function into a directory named after itself.
        globals_function = (self.source.get("Globals") or {}).get("Function") or {}
        groups = {}
        for name, resource in self.functions(self.source).items():
            groups.setdefault(build_definition(resource, globals_function), []).append(name)
        built = self.functions(self.built)
        for names in groups.values():
            expected = f"{names[0]}-Shared" if len(names) > 1 else names[0]
            for name in names:
                with self.subTest(function=name):
                    self.assertEqual(built[name]["Properties"]["CodeUri"], expected)
        self.assertIn(["GrabFunction", "GrabManagedFunction"], list(groups.values()))


if __name__ == "__main__":
    unittest.main()
