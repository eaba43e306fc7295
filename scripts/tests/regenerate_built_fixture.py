"""Rewrite fixtures/built-template.yaml from today's template.yaml, as `sam build` would write it.

Runs SAM CLI's own `sam build --beta-features --parallel --cached` in-process, in a temporary
copy of template.yaml, with the compile step (ApplicationBuilder._build_function) replaced by
one that writes an empty bootstrap: no cargo, no zig, seconds. So the build graph, the shared
build directory (-Shared), the CodeUris and the template's text are SAM's own. Then it keeps
what the artifact mapping reads (see the fixture's header). Nothing is written under .aws-sam.

    .local/venv/bin/python scripts/tests/regenerate_built_fixture.py

Run it when test_built_artifacts.FixtureFollowsTemplate says the fixture no longer follows
template.yaml (a function added, renamed, or its build changed).
"""

import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURE = os.path.join(HERE, "fixtures", "built-template.yaml")
KEEP_SECTIONS = ["AWSTemplateFormatVersion", "Transform", "Parameters", "Conditions", "Globals", "Resources"]
KEEP_TYPES = ("AWS::Serverless::Function", "AWS::Serverless::CapacityProvider")

HEADER = """\
# The built template `make build` leaves in .aws-sam/build/template.yaml, as SAM CLI {version}
# writes it for this project's template.yaml on a first build (no .aws-sam/cache yet) with
# --beta-features --parallel --cached: SAM's own build code run in-process with the compile step
# (ApplicationBuilder._build_function) stubbed, so no cargo (scripts/tests/regenerate_built_fixture.py).
# The text below is SAM's output (yamlhelper.yaml_dump: long-form intrinsics, no tags), trimmed to
# what the artifact mapping reads: Parameters, Conditions, Globals and the functions (and the grab
# capacity provider); the other resources, Metadata, Rules and Outputs are left out.
#
# GrabFunction and GrabManagedFunction have equal build definitions, so SAM builds them once, into
# GrabFunction-Shared (build_graph.py: FunctionBuildDefinition.get_build_dir), and both CodeUris
# point there. Every function is kept, Conditions and all. scripts/tests/test_built_artifacts.py
# checks that every function of template.yaml is here, with its binary and Condition.
"""


def built_template(work):
    """SAM's built template text for a copy of template.yaml in `work`."""
    os.environ["SAM_CLI_TELEMETRY"] = "0"
    os.environ["HOME"] = work  # SAM's global config (~/.aws-sam) goes to the scratch directory
    from unittest import mock

    from click.testing import CliRunner
    from samcli.cli.main import cli
    from samcli.lib.build.app_builder import ApplicationBuilder

    def stub_build(self, function_name, codeuri, imageuri, packagetype, runtime, architecture, handler,
                   artifact_dir, metadata=None, container_env_vars=None, dependencies_dir=None,
                   download_dependencies=True):
        os.makedirs(artifact_dir, exist_ok=True)
        bootstrap = os.path.join(artifact_dir, "bootstrap")
        with open(bootstrap, "w") as file:
            file.write("#!/bin/sh\n")
        os.chmod(bootstrap, 0o755)
        return artifact_dir

    project = os.path.join(work, "project")
    os.makedirs(project)
    with open(os.path.join(ROOT, "template.yaml"), encoding="utf-8") as source:
        with open(os.path.join(project, "template.yaml"), "w", encoding="utf-8") as copy:
            copy.write(source.read())
    cwd = os.getcwd()
    os.chdir(project)
    try:
        with mock.patch.object(ApplicationBuilder, "_build_function", stub_build):
            result = CliRunner().invoke(cli, ["build", "--beta-features", "--parallel", "--cached"], catch_exceptions=False)
    finally:
        os.chdir(cwd)
    if result.exit_code != 0:
        sys.exit(f"sam build (compile stubbed) failed:\n{result.output}")
    with open(os.path.join(project, ".aws-sam", "build", "template.yaml"), encoding="utf-8") as file:
        return file.read()


def blocks(lines, pattern):
    """Split lines into (name, lines) blocks, each starting at a line matching pattern."""
    found = []
    for line in lines:
        match = re.match(pattern, line)
        if match:
            found.append((match.group(1), [line]))
        elif found:
            found[-1][1].append(line)
    return found


def trimmed(text):
    out = []
    for name, lines in blocks(text.splitlines(keepends=True), r"^([A-Za-z][A-Za-z0-9]*):"):
        if name not in KEEP_SECTIONS:
            continue
        if name != "Resources":
            out += lines
            continue
        out.append(lines[0])
        for _, resource in blocks(lines[1:], r"^  ([A-Za-z0-9]+):\s*$"):
            kind = next((l.split(":", 1)[1].strip() for l in resource if l.startswith("    Type:")), "")
            if kind in KEEP_TYPES:
                out += resource
    return "".join(out)


def main():
    import samcli

    with tempfile.TemporaryDirectory(prefix="built-fixture-") as work:
        text = built_template(work)
    with open(FIXTURE, "w", encoding="utf-8") as file:
        file.write(HEADER.format(version=samcli.__version__) + trimmed(text))
    print(f"wrote {os.path.relpath(FIXTURE, ROOT)}")


if __name__ == "__main__":
    main()
