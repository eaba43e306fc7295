"""Each function's artifact, as `sam build` recorded it in .aws-sam/build/template.yaml.

The built template is the only place that says where a function's `bootstrap` is. Its directory
is not always `.aws-sam/build/<LogicalId>` (SAM CLI 1.170, samcli/lib/build/):

- Functions whose build definitions are equal (same runtime, CodeUri, Metadata, architecture,
  handler: FunctionBuildDefinition.__eq__ in build_graph.py) are built once. GrabFunction and
  GrabManagedFunction are such a pair. With the beta features on (`--beta-features`, as
  `make build` runs it), FunctionBuildDefinition.get_build_dir names the shared directory after
  the first of them plus "-Shared": `.aws-sam/build/GrabFunction-Shared`, and
  DefaultBuildStrategy hands that one directory to both (build_strategy.py).
- On a rebuild with `--cached` and a valid cache, CachedOrIncrementalBuildStrategyWrapper links
  `.aws-sam/build/<dir>` to `.aws-sam/cache/<uuid>`, and ApplicationBuilder.update_template
  resolves that link: the built template's CodeUri is then `../cache/<uuid>`.
- `sam build` evaluates no Condition: every function is built and kept in the built template,
  GrabFunction (GrabOnLambda) and GrabManagedFunction (GrabOnManagedInstances) alike.

So this reads each AWS::Serverless::Function's CodeUri (relative to the built template's
directory, as commands/_utils/template.py's move_template writes it) and its binary
(Metadata.BuildProperties.Binary), checks that every function's bootstrap is there and
executable, and prints one line a function:

    <LogicalId> <binary> <absolute path of its bootstrap>

By default only the functions a deployment creates: their Conditions evaluated with the
template's parameter defaults, then samconfig.toml's deploy parameter_overrides (--samconfig),
then --parameter-overrides (SAM's `Key=Value Key=Value` form). So GrabCompute=lambda gives
GrabFunction and GrabCompute=managed-instances GrabManagedFunction, each with the one grab
artifact; functions that share an artifact are listed once. --all lists every function of the
built template, Conditions aside.

A missing template or artifact exits 2, naming each function whose bootstrap is missing.
Used by `make build` (scripts/build.sh, the artifact table) and `make verify-build`
(scripts/verify-build.sh). Needs PyYAML: run it with .local/venv/bin/python.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tomllib
from dataclasses import dataclass

import yaml

DEFAULT_TEMPLATE = ".aws-sam/build/template.yaml"
SERVERLESS_FUNCTION = "AWS::Serverless::Function"


class BuiltArtifactsError(Exception):
    """The built template or an artifact is not what `make build` leaves: exit 2."""


# --- YAML with CloudFormation's short-form tags (template.yaml has them; SAM writes the built
# template in the long form, but a hand-edited or foreign one may not).


class CfnLoader(yaml.SafeLoader):
    """SafeLoader that reads `!Ref x` as {"Ref": "x"}, `!Sub s` as {"Fn::Sub": "s"}, and so on."""


def _intrinsic(loader: CfnLoader, tag_suffix: str, node: yaml.Node) -> dict:
    name = tag_suffix
    key = name if name in ("Ref", "Condition") else f"Fn::{name}"
    if name == "GetAtt" and isinstance(node, yaml.ScalarNode):
        return {key: loader.construct_scalar(node).split(".", 1)}
    if isinstance(node, yaml.ScalarNode):
        return {key: loader.construct_scalar(node)}
    if isinstance(node, yaml.SequenceNode):
        return {key: loader.construct_sequence(node, deep=True)}
    return {key: loader.construct_mapping(node, deep=True)}


CfnLoader.add_multi_constructor("!", _intrinsic)
# Dates stay strings, as SAM reads them (AWSTemplateFormatVersion: 2010-09-09 unquoted).
CfnLoader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)


def load_template(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as file:
            template = yaml.load(file, Loader=CfnLoader)  # noqa: S506 - a SafeLoader subclass
    except FileNotFoundError:
        raise BuiltArtifactsError(f"{path} is missing: make build first") from None
    if not isinstance(template, dict) or not isinstance(template.get("Resources"), dict):
        raise BuiltArtifactsError(f"{path} has no Resources: not a template sam build wrote")
    return template


# --- Functions and their artifacts.


@dataclass(frozen=True)
class Function:
    logical_id: str
    binary: str
    code_uri: str
    condition: str | None
    bootstrap: str  # absolute, normalised (symbolic links kept as written)


def functions(template: dict, template_path: str) -> list[Function]:
    """Every AWS::Serverless::Function of the built template, in the template's order."""
    base = os.path.dirname(os.path.abspath(template_path))
    found = []
    for logical_id, resource in template["Resources"].items():
        if not isinstance(resource, dict) or resource.get("Type") != SERVERLESS_FUNCTION:
            continue
        properties = resource.get("Properties") or {}
        code_uri = properties.get("CodeUri")
        if not isinstance(code_uri, str) or code_uri.startswith(("s3://", "http://", "https://")):
            raise BuiltArtifactsError(
                f"{logical_id}: CodeUri {code_uri!r} in {template_path} is not a built directory: make build first"
            )
        build_properties = (resource.get("Metadata") or {}).get("BuildProperties") or {}
        binary = build_properties.get("Binary")
        if not isinstance(binary, str) or not binary:
            raise BuiltArtifactsError(f"{logical_id}: no Metadata.BuildProperties.Binary in {template_path}")
        found.append(
            Function(
                logical_id=logical_id,
                binary=binary,
                code_uri=code_uri,
                condition=resource.get("Condition"),
                bootstrap=os.path.normpath(os.path.join(base, code_uri, "bootstrap")),
            )
        )
    if not found:
        raise BuiltArtifactsError(f"{template_path} has no {SERVERLESS_FUNCTION}")
    return found


def check_present(found: list[Function], template_path: str) -> None:
    """Every function's bootstrap is a file we may execute (sam build builds them all, and
    sam package uploads them all, Conditions aside)."""
    missing = [f for f in found if not (os.path.isfile(f.bootstrap) and os.access(f.bootstrap, os.X_OK))]
    if missing:
        lines = [
            f"  {f.logical_id} ({f.binary}): {f.bootstrap} "
            f"{'is not executable' if os.path.isfile(f.bootstrap) else 'is missing'} (CodeUri {f.code_uri})"
            for f in missing
        ]
        raise BuiltArtifactsError(
            f"artifacts of {template_path} missing:\n" + "\n".join(lines) + "\nmake build first"
        )


# --- Which functions a deployment creates: the template's Conditions on its parameters.


def parse_overrides(text: str) -> dict[str, str]:
    """SAM's `--parameter-overrides` form: `Key=Value Key2="a value"`."""
    overrides = {}
    for word in shlex.split(text or ""):
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise BuiltArtifactsError(f"parameter override {word!r} is not Key=Value")
        overrides[key] = value
    return overrides


def samconfig_overrides(path: str, environment: str = "default") -> dict[str, str]:
    """samconfig.toml's [<environment>.deploy.parameters] parameter_overrides (string or list)."""
    with open(path, "rb") as file:
        config = tomllib.load(file)
    value = config.get(environment, {}).get("deploy", {}).get("parameters", {}).get("parameter_overrides", "")
    if isinstance(value, list):
        value = " ".join(shlex.quote(item) for item in value)
    return parse_overrides(value)


def parameter_values(template: dict, overrides: dict[str, str]) -> dict[str, str]:
    parameters = template.get("Parameters") or {}
    values = {name: str(spec["Default"]) for name, spec in parameters.items() if "Default" in spec}
    for name, value in overrides.items():
        if name not in parameters:
            raise BuiltArtifactsError(f"parameter override {name}={value}: the template has no parameter {name}")
        allowed = parameters[name].get("AllowedValues")
        if allowed is not None and value not in [str(a) for a in allowed]:
            raise BuiltArtifactsError(f"{name}={value} is not one of {', '.join(str(a) for a in allowed)}")
        values[name] = value
    return values


def evaluate_condition(template: dict, name: str, values: dict[str, str]) -> bool:
    conditions = template.get("Conditions") or {}
    if name not in conditions:
        raise BuiltArtifactsError(f"condition {name} is not in the template's Conditions")

    def value(node):
        if isinstance(node, dict) and len(node) == 1:
            (key, argument), = node.items()
            if key == "Ref":
                if argument not in values:
                    raise BuiltArtifactsError(f"condition {name}: parameter {argument} has no value (no Default, no override)")
                return values[argument]
            if key == "Condition":
                return truth(conditions[argument])
            if key in ("Fn::Equals", "Fn::Not", "Fn::And", "Fn::Or"):
                return truth(node)
            raise BuiltArtifactsError(f"condition {name}: {key} is not evaluated here")
        if isinstance(node, (str, int, float, bool)):
            return str(node).lower() if isinstance(node, bool) else str(node)
        raise BuiltArtifactsError(f"condition {name}: cannot evaluate {node!r}")

    def truth(node) -> bool:
        if isinstance(node, dict) and len(node) == 1:
            (key, argument), = node.items()
            if key == "Fn::Equals":
                return value(argument[0]) == value(argument[1])
            if key == "Fn::Not":
                return not truth(argument[0])
            if key == "Fn::And":
                return all(truth(a) for a in argument)
            if key == "Fn::Or":
                return any(truth(a) for a in argument)
            if key == "Condition":
                return truth(conditions[argument])
        raise BuiltArtifactsError(f"condition {name}: cannot evaluate {node!r}")

    return truth(conditions[name])


def deployed(template: dict, found: list[Function], overrides: dict[str, str]) -> list[Function]:
    """The functions a deployment with these parameters creates, each artifact once."""
    values = parameter_values(template, overrides)
    chosen, seen = [], set()
    for function in found:
        if function.condition is not None and not evaluate_condition(template, function.condition, values):
            continue
        key = (function.binary, os.path.realpath(function.bootstrap))
        if key in seen:
            continue
        seen.add(key)
        chosen.append(function)
    return chosen


def artifacts(
    template_path: str = DEFAULT_TEMPLATE, overrides: dict[str, str] | None = None, every: bool = False
) -> list[Function]:
    """What `make verify-build` runs (or with every=True, what `make build` lists)."""
    template = load_template(template_path)
    found = functions(template, template_path)
    check_present(found, template_path)
    return found if every else deployed(template, found, overrides or {})


def route_events(template_path: str = "template.yaml", events_dir: str = "events") -> list[tuple[str, str]]:
    """Each app route's sample event with the binary that answers it: the events/*.json whose
    routeKey is a route of a function's HttpApi events, paired with that function's binary
    (Metadata.BuildProperties.Binary), sorted by binary and file. The routes' own table
    (shared/src/routes.rs) names each route's event; `make verify-build` runs them by this."""
    served: dict[str, str] = {}
    for resource in load_template(template_path).get("Resources", {}).values():
        binary = ((resource.get("Metadata") or {}).get("BuildProperties") or {}).get("Binary")
        for event in ((resource.get("Properties") or {}).get("Events") or {}).values():
            if binary and event.get("Type") == "HttpApi":
                served[f"{event['Properties']['Method']} {event['Properties']['Path']}"] = binary
    pairs = []
    for name in sorted(os.listdir(events_dir)):
        if name.endswith(".json"):
            with open(os.path.join(events_dir, name), encoding="utf-8") as file:
                key = json.load(file).get("routeKey")
            if key in served:
                pairs.append((served[key], name))
    return sorted(pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--template", default=DEFAULT_TEMPLATE, help=f"the built template (default {DEFAULT_TEMPLATE})")
    parser.add_argument("--all", action="store_true", help="every function of the built template, Conditions aside")
    parser.add_argument("--samconfig", help="read [default.deploy.parameters] parameter_overrides from this samconfig.toml")
    parser.add_argument("--parameter-overrides", default="", help="Key=Value ..., over the samconfig's (e.g. GrabCompute=managed-instances)")
    parser.add_argument("--route-events", action="store_true", help="print `<binary> <event file>` for each app route's sample event (template.yaml, events/)")
    args = parser.parse_args(argv)
    if args.route_events:
        for binary, event in route_events():
            print(binary, event)
        return 0
    try:
        overrides = samconfig_overrides(args.samconfig) if args.samconfig else {}
        overrides.update(parse_overrides(args.parameter_overrides))
        for function in artifacts(args.template, overrides, every=args.all):
            print(function.logical_id, function.binary, function.bootstrap)
    except BuiltArtifactsError as error:
        print(f"built_artifacts: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
