#!/usr/bin/env python3
"""The deploying identity's policy: what `sam deploy` of template.yaml needs, derived.

    .local/venv/bin/python scripts/deploy_policy.py                 print the policy (JSON)
    .local/venv/bin/python scripts/deploy_policy.py --split         print it as managed policies
    .local/venv/bin/python scripts/deploy_policy.py --write FILE    put it between FILE's deploy-policy markers
    .local/venv/bin/python scripts/deploy_policy.py --check FILE    fail when FILE's block is not this

Where each part comes from:
- CloudFormation's own actions: the calls SAM CLI's deployer makes on `sam deploy`'s path
  (SAM_DEPLOY_CALLS, each with where SAM CLI makes it), on this stack and on the managed stack
  `resolve_s3` keeps the artifact bucket in; and CreateChangeSet on the transforms the templates
  name (template.yaml's and the managed stack's `Transform`), as the CloudFormation User Guide's
  example policy does (https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/using-iam-template.html).
- The artifact bucket: SAM CLI uploads the packaged code and the template (PutObject, after a
  HeadObject, which needs GetObject), and CloudFormation reads them with the caller's credentials.
- Every resource type of every parameter set's transform (scripts/transform.py, in-process) and
  of SAM CLI's managed stack: the actions its CloudFormation resource provider schema's create,
  read, update and delete handlers list (`handlers.<h>.permissions`), from the schemas cfn-lint
  ships in its package (cfnlint/data/schemas: providers/us-east-1.json maps a type to
  resources/<hash>.json). A type whose schema has no handlers must be in EXPLICIT, with a source.
- iam:PassRole, on the stack's roles: every role a function, the Pipe, a schedule, the capacity
  provider, a deployment group or a rule is given is a role of the stack (passed_roles), named by
  CloudFormation after the stack (`<stack>-<logical id>-<suffix>`).
- lambda:PassCapacityProvider (Lambda Managed Instances: the grab function on its capacity
  provider), which AWS::Lambda::Function's handlers list, in a statement of its own:
  https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-security.html

Resources: CloudFormation on the stacks and the transform, the IAM actions on the stack's roles
and policies (and service-linked roles), object reads on the artifact bucket; the rest "*".
"""

import functools
import json
import logging
import os
import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import iam  # noqa: E402

BEGIN, END = "<!-- deploy-policy:begin -->", "<!-- deploy-policy:end -->"

# samconfig.toml's stack_name; a stage of its own deploys as red-packets-<stage>. CloudFormation
# names the roles and policies it creates without a name `<stack>-<logical id>-<suffix>`.
STACK_PREFIX = "red-packets"
PARTITION = "aws"

# SAM CLI's managed stack (`resolve_s3 = true`): its bucket holds what `sam deploy` uploads;
# CloudFormation names it `<stack>-<logical id>-<suffix>`, lower case.
MANAGED_STACK = "aws-sam-cli-managed-default"
ARTIFACT_OBJECTS = f"arn:{PARTITION}:s3:::{MANAGED_STACK}-samclisourcebucket-*/*"

# What `sam deploy` calls on CloudFormation (SAM CLI 1.x, samcli/lib/deploy/deployer.py and
# samcli/lib/utils/managed_cloudformation_stack.py), with the call that needs it. Not on this
# path: create_stack/update_stack (sam sync), delete_stack/rollback_stack (`--on-failure DELETE`).
SAM_DEPLOY_CALLS = {
    "cloudformation:DescribeStacks": "has_stack; the stack_create_complete/stack_update_complete waiters; the outputs; the managed stack's lookup",
    "cloudformation:GetTemplateSummary": "an existing stack's parameters before its change set (create_changeset)",
    "cloudformation:CreateChangeSet": "create_changeset",
    "cloudformation:DescribeChangeSet": "the change_set_create_complete waiter; describe_changeset's paginator",
    "cloudformation:ExecuteChangeSet": "execute_changeset",
    "cloudformation:DescribeStackEvents": "describe_stack_events while it waits",
}

# What SAM CLI does on the artifact bucket: uploads (multipart parts included) and HeadObject
# before each (samcli/lib/package/s3_uploader.py), which S3 authorizes as s3:GetObject;
# CloudFormation reads the template (TemplateURL) and Lambda the code as the caller.
ARTIFACT_ACTIONS = ["s3:GetObject", "s3:PutObject"]

# Handler actions that read objects: on this stack, the only objects read are the artifacts
# (CodeUri; no BodyS3Location, table import or cache snapshot is used), so they are scoped there.
OBJECT_READS = {"s3:getobject", "s3:getobjectversion"}

# Types whose schema has no handlers: the actions each needs, and the source. None at present.
EXPLICIT = {}

ACTION_NAME = re.compile(r"^[A-Za-z0-9-]+:[A-Za-z0-9]+$")


def schema_dir():
    import cfnlint

    return Path(cfnlint.__file__).parent / "data" / "schemas"


def schema_source():
    """cfn-lint's version and its schemas' date."""
    from importlib.metadata import version

    date = json.loads((schema_dir() / "version.json").read_text())["schema_date"]
    return version("cfn-lint"), date


_SCHEMAS = {}


@functools.lru_cache(maxsize=None)
def schema(resource_type):
    """The resource provider schema cfn-lint ships for `resource_type` (us-east-1), or None."""
    if not _SCHEMAS:
        _SCHEMAS.update(json.loads((schema_dir() / "providers" / "us-east-1.json").read_text()))
    digest = _SCHEMAS.get(resource_type)
    if digest is None:
        return None
    return json.loads((schema_dir() / "resources" / f"{digest}.json").read_text())


def canonical(action):
    """IAM matches actions case-insensitively: one spelling, its action name capitalized."""
    service, name = action.split(":", 1)
    return f"{service.lower()}:{name[:1].upper()}{name[1:]}"


def handler_actions(resource_type):
    """(actions, names that are not IAM actions) of the type's create, read, update and delete
    handlers; None when the schema has no handlers (EXPLICIT's, then)."""
    if resource_type in EXPLICIT:
        return set(EXPLICIT[resource_type]["actions"]), set()
    found = schema(resource_type)
    if found is None or not found.get("handlers"):
        return None
    actions, invalid = set(), set()
    for handler in ("create", "read", "update", "delete"):
        for action in found["handlers"].get(handler, {}).get("permissions", []):
            if ACTION_NAME.match(action):
                actions.add(canonical(action))
            else:
                invalid.add(action)
    return actions, invalid


def templates():
    """{parameter set: transformed template} for every PARAMETER_SETS entry, as scripts/transform.py
    transforms them, and SAM CLI's managed stack (its artifact bucket)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    import transform
    from samtranslator.yaml_helper import yaml_parse

    source = yaml_parse((ROOT / "template.yaml").read_text())
    out = {name: transform.transform(transform.packaged(source), parameters, transform.NoManagedPolicies())
           for name, parameters in transform.PARAMETER_SETS.items()}
    out[MANAGED_STACK] = managed_stack_template()
    return source, out


def managed_stack_template():
    """The template SAM CLI deploys as its managed stack. Its GlobalConfig (which writes
    ~/.aws-sam) is stubbed: only the installation id in its Metadata comes from it."""
    from samcli.lib.bootstrap import bootstrap

    real = bootstrap.GlobalConfig
    bootstrap.GlobalConfig = lambda: types.SimpleNamespace(installation_id=None)
    try:
        return json.loads(bootstrap._get_stack_template())
    finally:
        bootstrap.GlobalConfig = real


def resource_types(template):
    return sorted({resource["Type"] for resource in template.get("Resources", {}).values()})


def transforms(*sources):
    names = set()
    for source in sources:
        value = source.get("Transform", [])
        names.update([value] if isinstance(value, str) else value)
    return sorted(names)


def role_references(template):
    """(resource, property path, role's logical id or None) for every property naming a role:
    a GetAtt/Ref/Sub of an AWS::IAM::Role, or a property whose name ends in Role or RoleArn
    (Role, RoleArn, ExecutionRoleArn, ServiceRoleArn, CapacityProviderOperatorRoleArn...)."""
    resources = template.get("Resources", {})
    roles = {name for name, r in resources.items() if r["Type"] == "AWS::IAM::Role"}
    found = []

    def visit(resource, value, path):
        if isinstance(value, dict):
            if isinstance(value.get("Fn::GetAtt"), list) and value["Fn::GetAtt"][0] in roles:
                found.append((resource, path, value["Fn::GetAtt"][0]))
                return
            if value.get("Ref") in roles:
                found.append((resource, path, value["Ref"]))
                return
            for key, item in value.items():
                visit(resource, item, path + [key])
            return
        if isinstance(value, list):
            for index, item in enumerate(value):
                visit(resource, item, path + [index])
            return
        if not isinstance(value, str) or value == "AWS::NoValue" or path[-2:-1] == ["Fn::If"] and path[-1] == 0:
            return
        named = [role for role in roles if re.search(r"\$\{" + role + r"(\.Arn)?\}", value)]
        if named:
            found.extend((resource, path, role) for role in named)
            return
        keys = [p for p in path if isinstance(p, str) and p != "Ref" and not p.startswith("Fn::")]
        if keys and keys[-1].endswith(("Role", "RoleArn")):
            found.append((resource, path, None))

    for name, resource in sorted(resources.items()):
        if resource["Type"] in ("AWS::IAM::Role", "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            continue
        visit(name, resource.get("Properties", {}), [])
    return found


def passed_roles(templates_by_name):
    """The stack roles given to a service, by parameter set; fails on a role not of the stack."""
    out = {}
    for name, template in templates_by_name.items():
        for resource, path, role in role_references(template):
            if role is None:
                raise ValueError(f"[{name}] {resource}.{'.'.join(map(str, path))} names a role not of the stack: "
                                 "add it to the PassRole statement")
            out.setdefault(name, set()).add(role)
    return out


def role_arn(logical_id, account="123456789012", suffix="AbCdEf012345"):
    """The ARN CloudFormation gives a role it names (`<stack>-<logical id>-<suffix>`)."""
    return f"arn:{PARTITION}:iam::{account}:role/{STACK_PREFIX}-{logical_id}-{suffix}"


def _sid(service):
    return "".join(part.capitalize() for part in re.split(r"[^a-z0-9]+", service))


IAM = f"arn:{PARTITION}:iam::*:"

# The statements whose actions have a resource narrower than "*", in the policy's order: the
# artifact bucket's objects, the stack's roles to pass, the capacity provider to pass, then the
# IAM actions on what CloudFormation names after the stack (roles, policies; users and groups,
# which AWS::IAM::ManagedPolicy's handlers list, though this stack attaches none) and on
# service-linked roles.
SCOPES = [
    ("SamArtifacts", ARTIFACT_OBJECTS),
    ("PassStackRoles", IAM + f"role/{STACK_PREFIX}*"),
    ("PassCapacityProvider", f"arn:{PARTITION}:lambda:*:*:capacity-provider:{STACK_PREFIX}*"),
    ("StackRoles", IAM + f"role/{STACK_PREFIX}*"),
    ("StackManagedPolicies", IAM + f"policy/{STACK_PREFIX}*"),
    ("StackUsers", IAM + f"user/{STACK_PREFIX}*"),
    ("StackGroups", IAM + f"group/{STACK_PREFIX}*"),
    ("ServiceLinkedRoles", IAM + "role/aws-service-role/*"),
]


def literal_prefix(value):
    """The text a name property starts with whatever the parameters: a string's, or a Fn::Sub's
    up to its first substitution; "" when it is not known."""
    if isinstance(value, dict) and "Fn::Sub" in value:
        text = value["Fn::Sub"][0] if isinstance(value["Fn::Sub"], list) else value["Fn::Sub"]
        return text.split("${", 1)[0]
    return value if isinstance(value, str) else ""


def capacity_providers_named(templates_by_name):
    """Whether every capacity provider of every parameter set is named `<STACK_PREFIX>...` by the
    template (CapacityProviderName), so that PassCapacityProvider can be scoped to that name."""
    return all(literal_prefix(r.get("Properties", {}).get("CapacityProviderName")).startswith(STACK_PREFIX)
               for t in templates_by_name.values() for r in t.get("Resources", {}).values()
               if r["Type"] == "AWS::Lambda::CapacityProvider")


def scope_of(action):
    """The SCOPES entry of a handler action, or None for "*"."""
    lowered, name = action.lower(), action.split(":", 1)[1]
    scope = dict(SCOPES)
    if lowered in OBJECT_READS:
        sid = "SamArtifacts"
    elif lowered == "iam:passrole":
        sid = "PassStackRoles"
    elif lowered == "lambda:passcapacityprovider":
        sid = "PassCapacityProvider"
    elif not lowered.startswith("iam:"):
        return None
    elif name == "CreateServiceLinkedRole":
        sid = "ServiceLinkedRoles"
    elif "Role" in name:
        sid = "StackRoles"
    elif "User" in name:
        sid = "StackUsers"
    elif "Group" in name:
        sid = "StackGroups"
    elif "Polic" in name:
        sid = "StackManagedPolicies"
    else:
        return None
    return sid, scope[sid]


def derive(loaded=None):
    """(policy, facts): the policy document and what the block says of its sources; `loaded` is
    templates()'s answer when the caller has it."""
    source, by_name = loaded or templates()
    types_by_set = {name: resource_types(t) for name, t in by_name.items()}
    all_types = sorted({t for ts in types_by_set.values() for t in ts})
    actions, invalid, missing = set(), {}, []
    for resource_type in all_types:
        found = handler_actions(resource_type)
        if found is None:
            missing.append(resource_type)
            continue
        actions |= found[0]
        for name in found[1]:
            invalid.setdefault(name, []).append(resource_type)
    if missing:
        raise ValueError(f"no handlers in the schema of {missing}: add them to EXPLICIT with a source")
    roles = passed_roles(by_name)

    stacks = [f"arn:{PARTITION}:cloudformation:*:*:stack/{STACK_PREFIX}*/*",
              f"arn:{PARTITION}:cloudformation:*:*:stack/{MANAGED_STACK}/*"]
    names = transforms(source, by_name[MANAGED_STACK])
    statements = [
        {"Sid": "CloudFormationStacks", "Effect": "Allow", "Action": sorted(SAM_DEPLOY_CALLS), "Resource": stacks},
        {"Sid": "CloudFormationTransform", "Effect": "Allow", "Action": ["cloudformation:CreateChangeSet"],
         "Resource": [f"arn:{PARTITION}:cloudformation:*:aws:transform/{t.split('::', 1)[1]}" for t in names]},
    ]
    cloudformation = {a.lower() for a in SAM_DEPLOY_CALLS}
    scoped = {scope: set() for scope in SCOPES}
    scoped[("SamArtifacts", ARTIFACT_OBJECTS)].update(ARTIFACT_ACTIONS)
    by_service = {}
    for action in sorted(actions):
        scope = scope_of(action)
        if action.lower() in cloudformation:
            continue
        if scope:
            scoped[scope].add(action)
        else:
            by_service.setdefault(action.split(":")[0], set()).add(action)
    for (sid, resource), listed in scoped.items():
        if sid == "PassCapacityProvider" and not capacity_providers_named(by_name):
            resource = f"arn:{PARTITION}:lambda:*:*:capacity-provider:*"  # a name CloudFormation makes up
        if listed:
            statements.append({"Sid": sid, "Effect": "Allow", "Action": sorted(listed, key=str.lower), "Resource": resource})
    for service, listed in sorted(by_service.items()):
        statements.append({"Sid": f"Handlers{_sid(service)}", "Effect": "Allow", "Action": sorted(listed, key=str.lower), "Resource": "*"})
    policy = {"Version": "2012-10-17", "Statement": statements}
    version, date = schema_source()
    import samcli

    facts = {
        "types": all_types,
        "types_by_set": types_by_set,
        "handler_actions": sorted(actions),
        "invalid": invalid,
        "passed_roles": sorted({r for rs in roles.values() for r in rs}),
        "cfn_lint": version,
        "schema_date": date,
        "sam_cli": samcli.__version__,
        "transforms": names,
    }
    return policy, facts


def policy_actions(policy):
    return sorted({a for s in policy["Statement"] for a in iam._listed(s["Action"])}, key=str.lower)


def uncovered(policy, template):
    """Problems: each resource type of `template` whose handlers' actions the policy does not
    hold (or whose schema has none and is not EXPLICIT), naming the type and the actions."""
    patterns = {p for statement in policy["Statement"] for p in iam._listed(statement["Action"])}
    literal = {p.lower() for p in patterns if "*" not in p and "?" not in p}
    wildcards = [p for p in patterns if p.lower() not in literal]

    def granted(action):
        return action.lower() in literal or any(iam.action_matches(p, action) for p in wildcards)

    problems = []
    for resource_type in resource_types(template):
        found = handler_actions(resource_type)
        if found is None:
            problems.append(f"{resource_type}: no handlers in its schema (cfn-lint {schema_source()[0]}) and not in EXPLICIT")
            continue
        missing = [a for a in sorted(found[0]) if not granted(a)]
        if missing:
            problems.append(f"{resource_type}: {', '.join(missing)} not in the policy")
    return problems


def size(document):
    """IAM's count of a policy's characters: whitespace is not counted."""
    return len(re.sub(r"\s", "", json.dumps(document)))


MANAGED_POLICY_LIMIT = 6144  # https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html


def split(policy, limit=MANAGED_POLICY_LIMIT):
    """The policy as managed policies of at most `limit` characters each: statements packed in
    order, a statement too big for one split by its actions."""
    pieces = []
    for statement in policy["Statement"]:
        actions = iam._listed(statement["Action"])
        chunk, part = [], 1
        for action in actions:
            trial = dict(statement, Action=chunk + [action])
            if chunk and size({"Version": "2012-10-17", "Statement": [trial]}) > limit - 64:
                pieces.append(dict(statement, Sid=f"{statement['Sid']}{part}", Action=chunk))
                chunk, part = [], part + 1
            chunk.append(action)
        pieces.append(dict(statement, Sid=f"{statement['Sid']}{part}" if part > 1 else statement["Sid"], Action=chunk))
    documents, current = [], []
    for piece in pieces:
        if current and size({"Version": "2012-10-17", "Statement": current + [piece]}) > limit:
            documents.append({"Version": "2012-10-17", "Statement": current})
            current = []
        current.append(piece)
    documents.append({"Version": "2012-10-17", "Statement": current})
    return documents


def block(policy, facts):
    """The markdown between the markers."""
    parts = split(policy)
    version, date = facts["cfn_lint"], facts["schema_date"]
    invalid = "; ".join(f"`{name}` ({', '.join(sorted(set(ts)))})" for name, ts in sorted(facts["invalid"].items()))
    lines = [
        f"{len(policy_actions(policy))} actions in {len(policy['Statement'])} statements, for "
        f"{len(facts['types'])} resource types (the {len(facts['types_by_set']) - 1} parameter sets' transforms and "
        f"SAM CLI's managed stack), from cfn-lint {version}'s schemas (dated {date}) and SAM CLI {facts['sam_cli']}. "
        f"{size(policy):,} characters without whitespace: more than a managed policy's {MANAGED_POLICY_LIMIT:,}, so "
        f"`--split` prints it as {len(parts)} managed policies to attach together.",
        "",
        "Types: " + ", ".join(f"`{t}`" for t in facts["types"]) + ".",
        "",
        "Roles passed (iam:PassRole, each named `" + STACK_PREFIX + "-<logical id>-<suffix>` by CloudFormation): "
        + ", ".join(f"`{r}`" for r in facts["passed_roles"]) + ".",
    ]
    if invalid:
        lines += ["", f"Left out, not IAM action names: {invalid}."]
    lines += ["", "```json", json.dumps(policy, indent=2), "```"]
    return "\n".join(lines) + "\n"


def replaced(text, new_block):
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + new_block + text[end:]


def main(argv):
    policy, facts = derive()
    if len(argv) == 3 and argv[1] in ("--write", "--check"):
        path = Path(argv[2])
        text = path.read_text()
        expected = replaced(text, block(policy, facts))
        if argv[1] == "--write":
            path.write_text(expected)
            return 0
        if text != expected:
            print(f"{path}: the deploying identity's policy is not what scripts/deploy_policy.py derives; run it with --write")
            return 1
        return 0
    if argv[1:] == ["--split"]:
        print(json.dumps(split(policy), indent=2))
        return 0
    if len(argv) > 1:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(policy, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
