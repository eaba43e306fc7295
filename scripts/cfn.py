"""A CloudFormation template as it stands for one parameter set: its conditions evaluated, its
intrinsic functions resolved to the names and ARNs the stack would have.

Physical names are made up but stable: a resource's name is its logical id (lower-cased for a
bucket; a log group's is its LogGroupName), in account 123456789012 of us-east-1 unless the
overrides name another `AWS::Region`, so `${PacketsTable.Arn}/index/history` becomes
`arn:aws:dynamodb:us-east-1:123456789012:table/PacketsTable/index/history`, a Ref of a subnet
or a security group is its logical id, and a Ref of a secret its ARN
(`arn:aws:secretsmanager:us-east-1:123456789012:secret:MembershipKeys-AbCdEf`).
`Stack.logical_id` goes back from such a value to the resource. Only what template.yaml uses is supported; anything else raises, so a new construct is
noticed rather than misread.

Used by scripts/permissions.py and scripts/network_paths.py; `parameter_sets()` gives both the
parameter sets scripts/transform.py translates the template for.
"""

import ast
import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent

REGION = "us-east-1"  # the region scripts/transform.py translates for
ACCOUNT = "123456789012"
PARTITION = "aws"
PSEUDO = {
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::Partition": PARTITION,
    "AWS::StackName": "red-packets",
    "AWS::URLSuffix": "amazonaws.com",
}

# How each resource type's ARN is built from its physical name (the service authorization
# reference's resource ARN formats).
ARN_FORMATS = {
    "AWS::DynamoDB::Table": "arn:{partition}:dynamodb:{region}:{account}:table/{name}",
    "AWS::S3::Bucket": "arn:{partition}:s3:::{name}",
    "AWS::SQS::Queue": "arn:{partition}:sqs:{region}:{account}:{name}",
    "AWS::SNS::Topic": "arn:{partition}:sns:{region}:{account}:{name}",
    "AWS::Events::EventBus": "arn:{partition}:events:{region}:{account}:event-bus/{name}",
    # A rule of a custom bus carries the bus's name: rule/<bus>/<rule> (`Stack.arn`).
    "AWS::Events::Rule": "arn:{partition}:events:{region}:{account}:rule/{name}",
    "AWS::Lambda::Function": "arn:{partition}:lambda:{region}:{account}:function:{name}",
    "AWS::IAM::Role": "arn:{partition}:iam::{account}:role/{name}",
    "AWS::Logs::LogGroup": "arn:{partition}:logs:{region}:{account}:log-group:{name}",
    # A secret's ARN ends in a hyphen and six random characters Secrets Manager adds to its name;
    # a Ref of the secret is that whole ARN (`Stack.resource_ref`), and IAM matches a request on
    # it, whatever form of the id the caller sent. Made up here as "-AbCdEf": a policy that names
    # the secret by its name alone (no suffix, no wildcard) matches nothing, as in AWS.
    "AWS::SecretsManager::Secret": "arn:{partition}:secretsmanager:{region}:{account}:secret:{name}-AbCdEf",
}

# The attributes whose value is the resource's id, which is also what its Ref gives.
ID_ATTRIBUTES = {
    "AWS::EC2::SecurityGroup": "GroupId",
    "AWS::EC2::Subnet": "SubnetId",
    "AWS::EC2::RouteTable": "RouteTableId",
    "AWS::EC2::VPC": "VpcId",
    "AWS::EC2::NatGateway": "NatGatewayId",
}

NO_VALUE = object()  # AWS::NoValue: the property or list item is dropped


def parameter_sets():
    """PARAMETER_SETS as scripts/transform.py defines it (read, not imported: it needs samtranslator)."""
    tree = ast.parse((HERE / "transform.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "PARAMETER_SETS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise SystemExit("scripts/transform.py defines no PARAMETER_SETS")


def conditions_named(node):
    """The conditions `node` names (a resource's Condition, Fn::If, Condition in a condition)."""
    found = set()
    if isinstance(node, list):
        for item in node:
            found |= conditions_named(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "Fn::If":
                found.add(value[0])
            if key == "Condition" and isinstance(value, str):
                found.add(value)
            found |= conditions_named(value)
    return found


def references(node):
    """The names `node` refers to (Ref, Fn::GetAtt, ${...} in Fn::Sub), unresolved: logical ids,
    and parameters' and pseudo parameters' names."""
    found = set()
    if isinstance(node, list):
        for item in node:
            found |= references(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                found.add(value)
            elif key == "Fn::GetAtt":
                found.add(value[0] if isinstance(value, list) else value.split(".")[0])
            elif key == "Fn::Sub":
                text = value[0] if isinstance(value, list) else value
                found |= {name.split(".")[0] for name in re.findall(r"\$\{([^}!]+)\}", text)}
                if isinstance(value, list):
                    found |= references(value[1])
            else:
                found |= references(value)
    return found


def canonical(value):
    """How Fn::Equals compares: as strings (a Number parameter "0" equals 0, true equals "true")."""
    if isinstance(value, list):
        return [canonical(item) for item in value]
    return str(value).lower() if isinstance(value, bool) else str(value)


class Stack:
    """`template` deployed with `overrides` on top of its parameters' defaults (a
    CommaDelimitedList parameter's value is a list)."""

    def __init__(self, template, overrides=None):
        self.template = template
        self.resources = template.get("Resources", {})
        overrides = overrides or {}
        self.parameters = {}
        for name, spec in template.get("Parameters", {}).items():
            value = str(overrides.get(name, spec.get("Default", "")))
            self.parameters[name] = value.split(",") if spec.get("Type") == "CommaDelimitedList" else value
        self.parameters.update({name: value for name, value in overrides.items() if name not in self.parameters})
        self._conditions = {}
        self._properties = {}
        self._logical_ids = None

    def physical_name(self, logical_id):
        resource = self.resources[logical_id]
        if resource["Type"] == "AWS::Logs::LogGroup" and "LogGroupName" in resource.get("Properties", {}):
            return self.resolve(resource["Properties"]["LogGroupName"])
        return logical_id.lower() if resource["Type"] == "AWS::S3::Bucket" else logical_id

    def arn(self, logical_id):
        kind = self.resources[logical_id]["Type"]
        if kind not in ARN_FORMATS:
            raise ValueError(f"no ARN format for {logical_id} ({kind})")
        name = self.physical_name(logical_id)
        if kind == "AWS::Events::Rule":
            # "arn:aws:events:<region>:<account>:rule/[<event-bus-name>/]<rule-name>" (the service
            # authorization reference, EventBridge's resource types): the default bus's rules omit it.
            bus = self.resolve(self.resources[logical_id].get("Properties", {}).get("EventBusName", "default"))
            bus = bus.split("event-bus/", 1)[1] if isinstance(bus, str) and "event-bus/" in bus else bus
            if bus and bus != "default":
                name = f"{bus}/{name}"
        partition, region, account = (self.ref(f"AWS::{pseudo}") for pseudo in ("Partition", "Region", "AccountId"))
        return ARN_FORMATS[kind].format(partition=partition, region=region, account=account, name=name)

    def condition(self, name):
        """The value of the template's condition `name` for this parameter set."""
        if name not in self._conditions:
            self._conditions[name] = bool(self.resolve(self.template["Conditions"][name]))
        return self._conditions[name]

    def exists(self, logical_id):
        """Whether the resource is created for this parameter set."""
        condition = self.resources[logical_id].get("Condition")
        return condition is None or self.condition(condition)

    def created(self, kind=None):
        """The logical ids of the resources this parameter set creates (only those of type `kind`
        if given), in the template's order."""
        return [name for name, r in self.resources.items() if (kind is None or r["Type"] == kind) and self.exists(name)]

    def properties(self, logical_id):
        """The resource's Properties, resolved."""
        if logical_id not in self._properties:
            self._properties[logical_id] = self.resolve(self.resources[logical_id].get("Properties", {}))
        return self._properties[logical_id]

    def logical_id(self, value):
        """The logical id of the resource whose Ref is `value` (as `resolve` gives it), or None."""
        if self._logical_ids is None:
            self._logical_ids = {self.resource_ref(name): name for name in self.resources}
        return self._logical_ids.get(value) if isinstance(value, str) else None

    def resource_ref(self, logical_id):
        """What a Ref of the resource gives: a topic's or a secret's ARN, any other resource's
        physical name."""
        kind = self.resources[logical_id]["Type"]
        by_arn = ("AWS::SNS::Topic", "AWS::SecretsManager::Secret")
        return self.arn(logical_id) if kind in by_arn else self.physical_name(logical_id)

    def ref(self, name):
        if name in PSEUDO:
            return self.parameters.get(name, PSEUDO[name])
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.parameters:
            return self.parameters[name]
        if name in self.resources:
            return self.resource_ref(name)
        raise ValueError(f"Ref to unknown {name}")

    def get_att(self, logical_id, attribute):
        if ID_ATTRIBUTES.get(self.resources.get(logical_id, {}).get("Type")) == attribute:
            return self.ref(logical_id)
        if attribute == "Arn" and self.resources[logical_id]["Type"] == "AWS::Logs::LogGroup":
            # What CloudFormation's Fn::GetAtt gives for a log group: its ARN with ":*", the form
            # IAM policies name it by for every action but tagging
            # (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/iam-access-control-overview-cwl.html).
            return self.arn(logical_id) + ":*"
        if attribute == "Arn":
            return self.arn(logical_id)
        if attribute == "StreamArn":
            return self.arn(logical_id) + "/stream/2026-01-01T00:00:00.000"
        if attribute == "QueueName":
            return self.physical_name(logical_id)
        return f"{logical_id}.{attribute}"

    def resolve(self, value):
        """`value` with every intrinsic function applied (`AWS::NoValue` dropped from lists and maps)."""
        if isinstance(value, list):
            return [item for item in (self.resolve(v) for v in value) if item is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, argument), = value.items()
            if key == "Ref":
                return self.ref(argument)
            if key == "Fn::GetAtt":
                logical_id, attribute = argument if isinstance(argument, list) else argument.split(".", 1)
                return self.get_att(logical_id, attribute)
            if key == "Fn::Sub":
                return self.substitute(argument)
            if key == "Fn::If":
                name, yes, no = argument
                return self.resolve(yes if self.condition(name) else no)
            if key == "Fn::Equals":
                left, right = (self.resolve(v) for v in argument)
                return canonical(left) == canonical(right)
            if key == "Fn::Not":
                return not self.resolve(argument[0])
            if key == "Fn::And":
                return all(self.resolve(v) for v in argument)
            if key == "Fn::Or":
                return any(self.resolve(v) for v in argument)
            if key == "Condition":
                return self.condition(argument)
            if key == "Fn::Join":
                separator, items = argument
                items = self.resolve(items)
                return separator.join(str(item) for item in (items if isinstance(items, list) else [items]))
            if key == "Fn::Split":
                separator, text = argument
                return str(self.resolve(text)).split(separator)
            if key == "Fn::Select":
                index, items = argument
                return self.resolve(items)[int(self.resolve(index))]
            if key == "Fn::FindInMap":
                mapping, first, second = (self.resolve(v) for v in argument)
                return self.template["Mappings"][mapping][first][second]
            if key == "Fn::GetAZs":
                region = self.ref("AWS::Region")
                return [f"{region}a", f"{region}b", f"{region}c"]
            if key.startswith("Fn::"):
                raise ValueError(f"unsupported intrinsic {key}")
        resolved = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in resolved.items() if v is not NO_VALUE}

    def substitute(self, argument):
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        variables = {name: self.resolve(v) for name, v in variables.items()}

        def one(match):
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                value = variables[name]
            elif "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                value = self.get_att(logical_id, attribute)
            else:
                value = self.ref(name)
            return ",".join(map(str, value)) if isinstance(value, list) else str(value)

        return re.sub(r"\$\{([^}]+)\}", one, text)
