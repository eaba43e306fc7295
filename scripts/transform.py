"""The SAM transform itself, on template.yaml, for every parameter set a deployment may use.

`sam validate --lint` does not run the transform that `sam deploy` runs (AWS::Serverless-2016-10-31
in CloudFormation): this does, with the translator SAM CLI bundles (samtranslator), after putting
S3 locations where `sam package` puts them. Then it checks the translated template as
CloudFormation would read it (cfn-lint on the output, which carries no SAM resources any more),
and a few facts of our own: every function got its schedule, DLQ destination and policies.
Exits non-zero on any error. Run by `make test` (scripts/test.sh).
"""

import copy
import json
import logging
import os
import subprocess
import sys
import tempfile

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

PARAMETER_SETS = {
    "defaults": {},
    "nodes": {"CacheMode": "nodes"},
    "scope": {"RequiredScope": "packets/use"},
    "nodes-scope-wait": {"CacheMode": "nodes", "RequiredScope": "packets/use", "GrabWaitReplicas": "1"},
    "own-issuer": {"JwtIssuer": "https://issuer.example.com", "JwtAudience": "app-client"},
}


class NoManagedPolicies:
    """The template names no AWS managed policy by name, so no IAM lookup is needed."""

    def load(self):
        return {}


def packaged(template):
    """What `sam package` hands CloudFormation: every CodeUri an S3 location."""
    template = copy.deepcopy(template)
    for name, resource in template["Resources"].items():
        if resource.get("Type") == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = f"s3://red-packets-artifacts/{name}.zip"
    return template


def check_translated(name, output):
    problems = []
    resources = output["Resources"]
    if any(r["Type"].startswith("AWS::Serverless::") for r in resources.values()):
        problems.append("SAM resources left after the transform")
    functions = [n for n, r in resources.items() if r["Type"] == "AWS::Lambda::Function"]
    if sorted(functions) != ["GrabFunction", "QueryFunction", "SendFunction", "SettleFunction"]:
        problems.append(f"functions {sorted(functions)}")
    schedules = [n for n, r in resources.items() if r["Type"] == "AWS::Scheduler::Schedule"]
    if len(schedules) != 2:
        problems.append(f"{len(schedules)} settle schedules, expected 2")
    invoke_configs = [r for r in resources.values() if r["Type"] == "AWS::Lambda::EventInvokeConfig"]
    if len(invoke_configs) != 1 or "OnFailure" not in json.dumps(invoke_configs[0]):
        problems.append("settle's on-failure destination is missing")
    apis = [r for r in resources.values() if r["Type"] == "AWS::ApiGatewayV2::Api"]
    body = json.dumps(apis[0]["Properties"].get("Body", {})) if apis else ""
    if "JwtAuthorizer" not in body:
        problems.append("the JWT authorizer is not on the routes")
    return problems


def main():
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("samtranslator").setLevel(logging.ERROR)  # its metrics' noise
    source = yaml_parse(open("template.yaml").read())
    failures = 0
    for name, parameters in PARAMETER_SETS.items():
        try:
            output = transform(packaged(source), parameters, NoManagedPolicies())
        except Exception as error:  # the translator raises several exception types
            causes = getattr(error, "causes", None) or [error]
            for cause in causes:
                print(f"transform [{name}]: {getattr(cause, 'message', cause)}")
            failures += 1
            continue
        problems = check_translated(name, output)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
            json.dump(output, file)
        lint = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), "cfn-lint"), "--regions", "us-east-1", "--", file.name],
            capture_output=True,
            text=True,
        )
        os.unlink(file.name)
        if lint.returncode not in (0, 4, 8, 12):  # 2 = errors; 4 warnings, 8 informational
            problems.append("cfn-lint on the translated template:\n" + lint.stdout + lint.stderr)
        for problem in problems:
            print(f"transform [{name}]: {problem}")
        failures += bool(problems)
        if not problems:
            print(f"transform [{name}]: {len(output['Resources'])} CloudFormation resources, cfn-lint clean")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
