"""scripts/sam_stage.py: the template's functions staged from the host's binaries as `sam build`
lays them out."""

import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import sam_stage  # noqa: E402
from samcli.yamlhelper import yaml_parse  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
TEMPLATE = (ROOT / "template.yaml").read_text()


def binaries(template: dict) -> set:
    return {
        resource["Metadata"]["BuildProperties"]["Binary"]
        for resource in template["Resources"].values()
        if resource.get("Type") == "AWS::Serverless::Function"
    }


class StageTest(unittest.TestCase):
    def test_every_function_runs_its_own_binary_on_the_hosts_architecture(self):
        with tempfile.TemporaryDirectory() as work:
            build, target = Path(work) / "build", Path(work) / "target"
            target.mkdir()
            for binary in binaries(yaml_parse(TEMPLATE)):
                (target / binary).write_text(f"#!{binary}")
            built = sam_stage.stage(TEMPLATE, build, target, "x86_64")
            functions = {
                name: resource
                for name, resource in built["Resources"].items()
                if resource.get("Type") == "AWS::Serverless::Function"
            }
            self.assertGreaterEqual(len(functions), 7)
            self.assertEqual(built["Globals"]["Function"]["Architectures"], ["x86_64"])
            for name, resource in functions.items():
                binary = resource["Metadata"]["BuildProperties"]["Binary"]
                self.assertEqual(resource["Properties"]["CodeUri"], name)
                self.assertEqual((build / name / "bootstrap").read_text(), f"#!{binary}", name)
                self.assertNotEqual(resource["Properties"].get("Architectures"), ["arm64"], name)

    def test_a_missing_binary_fails_the_staging(self):
        with tempfile.TemporaryDirectory() as work:
            with self.assertRaises(SystemExit) as failed:
                sam_stage.stage(TEMPLATE, Path(work) / "build", Path(work) / "empty", "x86_64")
            self.assertIn("missing", str(failed.exception))


if __name__ == "__main__":
    unittest.main()
