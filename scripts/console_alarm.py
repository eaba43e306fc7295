#!/usr/bin/env python3
"""The console distribution's 5xx alarm for a stack outside us-east-1, in a small stack there.

CloudFront publishes its metrics in us-east-1 only, and an alarm reads the metrics of its own
Region, so template.yaml creates Console5xxAlarm only in a stack deployed to us-east-1 (condition
CloudFrontMetricsHere). For a stack in another Region this deploys that same alarm, as
template.yaml declares it, to us-east-1, in a stack named `<stack>-<its Region>-console-alarm`,
notifying an alarm topic of its own there, declared and subscribed as the stack's AlarmTopic.

    .local/venv/bin/python scripts/console_alarm.py --stack red-packets --region eu-west-1
    .local/venv/bin/python scripts/console_alarm.py --template     the us-east-1 stack's template

The deploy reads the stack's ConsoleDistributionId output and its parameters (AlarmEmail), then
creates or updates the us-east-1 stack through a change set: the calls `sam deploy` makes, which
the deploying identity's policy (docs/DEPLOY.md) allows on stacks named red-packets*. Run it after
a deploy that creates or replaces the distribution. Uses boto3 from SAM CLI's virtualenv, with the
caller's AWS credentials. scripts/tests/test_console_alarm.py checks the template.
"""

import argparse
import copy
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import cfn  # noqa: E402

ALARM, TOPIC, DISTRIBUTION = "Console5xxAlarm", "AlarmTopic", "ConsoleDistribution"
# The us-east-1 stack's parameter naming the distribution: the stack's output of that name.
DISTRIBUTION_PARAMETER = "ConsoleDistributionId"
ALARM_REGION = "us-east-1"


def stack_name(stack, region):
    return f"{stack}-{region}-console-alarm"


def _distribution_as_parameter(node):
    if node == {"Ref": DISTRIBUTION}:
        return {"Ref": DISTRIBUTION_PARAMETER}
    if isinstance(node, dict):
        return {key: _distribution_as_parameter(value) for key, value in node.items()}
    if isinstance(node, list):
        return [_distribution_as_parameter(item) for item in node]
    return node


def alarm_template(source):
    """The us-east-1 stack's template, from template.yaml (`source`, parsed): its Console5xxAlarm
    without its condition, on the distribution a parameter names, and its AlarmTopic, with the
    parameters and conditions these read, as template.yaml declares them."""
    alarm = copy.deepcopy(source["Resources"][ALARM])
    del alarm["Condition"]
    resources = {TOPIC: copy.deepcopy(source["Resources"][TOPIC]), ALARM: _distribution_as_parameter(alarm)}
    parameters = {DISTRIBUTION_PARAMETER: {
        "Type": "String",
        "Description": "The console's CloudFront distribution: the ConsoleDistributionId output of the stack.",
    }}
    conditions, pending = {}, set(cfn.conditions_named(resources))
    while pending:
        name = pending.pop()
        conditions[name] = source["Conditions"][name]
        pending |= cfn.conditions_named(conditions[name]) - set(conditions)
    for name in sorted(cfn.references([resources, conditions]) - set(resources) - set(parameters)):
        if name.startswith("AWS::"):
            continue
        if name not in source["Parameters"]:
            raise ValueError(f"{ALARM} or {TOPIC} names {name}, which is not a parameter of template.yaml")
        parameters[name] = source["Parameters"][name]
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": "red-packets: the console distribution's 5xx alarm, in us-east-1 where CloudFront's metrics are "
                       "(scripts/console_alarm.py).",
        "Parameters": parameters,
        "Conditions": conditions,
        "Resources": resources,
        "Outputs": {"AlarmTopicArn": {"Description": "The topic the alarm notifies.", "Value": {"Ref": TOPIC}}},
    }


def source_template():
    from samtranslator.yaml_helper import yaml_parse

    return yaml_parse((ROOT / "template.yaml").read_text())


def _exists(cloudformation, name):
    """Whether the stack exists beyond a change set never executed (REVIEW_IN_PROGRESS)."""
    from botocore.exceptions import ClientError

    try:
        (described,) = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except ClientError:
        return False
    return described["StackStatus"] != "REVIEW_IN_PROGRESS"


def deploy(stack, region):
    import boto3
    from botocore.exceptions import WaiterError

    if region == ALARM_REGION:
        print(f"{stack} is in {ALARM_REGION}: its own {ALARM} watches the console's distribution")
        return 0
    (described,) = boto3.Session(region_name=region).client("cloudformation").describe_stacks(StackName=stack)["Stacks"]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
    given = {p["ParameterKey"]: p.get("ParameterValue", "") for p in described.get("Parameters", [])}
    if DISTRIBUTION_PARAMETER not in outputs:
        raise SystemExit(f"stack {stack} has no output {DISTRIBUTION_PARAMETER}: deploy template.yaml first")
    template = alarm_template(source_template())
    values = {**given, DISTRIBUTION_PARAMETER: outputs[DISTRIBUTION_PARAMETER]}
    cloudformation = boto3.Session(region_name=ALARM_REGION).client("cloudformation")
    name, change_set = stack_name(stack, region), f"console-alarm-{time.time_ns()}"
    exists = _exists(cloudformation, name)
    cloudformation.create_change_set(
        StackName=name,
        ChangeSetName=change_set,
        ChangeSetType="UPDATE" if exists else "CREATE",
        TemplateBody=json.dumps(template),
        Parameters=[{"ParameterKey": key, "ParameterValue": values[key]} for key in template["Parameters"] if key in values],
    )
    try:
        cloudformation.get_waiter("change_set_create_complete").wait(StackName=name, ChangeSetName=change_set)
    except WaiterError:
        reason = cloudformation.describe_change_set(StackName=name, ChangeSetName=change_set).get("StatusReason", "")
        if "didn't contain changes" in reason or "No updates" in reason:
            print(f"{name} ({ALARM_REGION}) is up to date")
            return 0
        raise SystemExit(f"{name}: the change set failed: {reason}")
    cloudformation.execute_change_set(StackName=name, ChangeSetName=change_set)
    cloudformation.get_waiter("stack_update_complete" if exists else "stack_create_complete").wait(StackName=name)
    print(f"{name} ({ALARM_REGION}): {ALARM} watches distribution {outputs[DISTRIBUTION_PARAMETER]}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", help="the stack deployed from template.yaml")
    parser.add_argument("--region", help="the stack's Region")
    parser.add_argument("--template", action="store_true", help="print the us-east-1 stack's template")
    args = parser.parse_args()
    if args.template:
        print(json.dumps(alarm_template(source_template()), indent=2))
        return 0
    if not (args.stack and args.region):
        parser.error("--stack and --region, or --template")
    return deploy(args.stack, args.region)


if __name__ == "__main__":
    sys.exit(main())
