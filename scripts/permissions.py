"""Each function's permissions, derived from the calls its code makes, checked on the transformed
template of every parameter set.

The emulators allow every call; AWS allows what the function's role allows. So the tests record
every AWS call each function makes (`local/src/calls.rs`: an interceptor on each of its SDK
clients, `AWS_CALL_LOG`), and this maps each call to the IAM actions and resources it needs,
following AWS's service authorization reference:

- a DynamoDB operation is the action of its name on its table, and a `Query` or `Scan` of an
  index is that action on the index's ARN (`table/<t>/index/<i>`);
  https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazondynamodb.html
- `BatchGetItem` and `BatchWriteItem` are actions of their own, on each table of the batch;
- `TransactWriteItems` needs the action of each item it holds (`dynamodb:PutItem`,
  `dynamodb:UpdateItem`, `dynamodb:DeleteItem`, `dynamodb:ConditionCheckItem`) and
  `TransactGetItems` `dynamodb:GetItem`;
  https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis-iam.html
- S3's `PutObject` is `s3:PutObject` on the object's ARN (`arn:aws:s3:::<bucket>/<key>`).
  https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazons3.html
- Secrets Manager's `GetSecretValue` is `secretsmanager:GetSecretValue` on the secret's ARN
  (`arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 random characters>`), whatever
  form of its id the caller sends (an ARN, a partial one, a name). The secrets use the AWS managed
  key aws/secretsmanager, so no `kms:Decrypt` is needed besides ("Required permissions",
  https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_GetSecretValue.html).
  https://docs.aws.amazon.com/service-authorization/latest/reference/list_awssecretsmanager.html
  The tests read secrets they made on a local Secrets Manager (moto), each named for the one it
  stands for (`...-membership-keys-...`, `...-passphrase-key-...`: SECRETS), as each test's table
  stands for the table; the call then needs the action on that template secret's ARN as
  scripts/cfn.py makes it up (its Ref, suffix included, which is what the functions' policies
  name), so a grant on another secret, on the name without its suffix, or none, is refused. A
  SecretId that names no template secret is a problem of its own.

Then, for every parameter set (`.local/transformed/<set>.json`, written by scripts/transform.py),
for every function the set creates, its role's statements are evaluated with IAM's rules
(scripts/iam.py): every recorded call of its binary must be allowed, naming the function, the
action, the call and the test that made it; and every action the role's inline policies grant
must be used by some recorded call, unless `EXPLAINED` says why. The managed policies SAM attaches
are Lambda's own (logs, network interfaces, traces), listed in `MANAGED` with why.

Who may invoke each function is checked the same way, on every parameter set. Every grant is
`lambda:InvokeFunction`, and no function has a URL (AWS::Lambda::Url, or a grant of
`lambda:InvokeFunctionUrl`). The APIs' routes: API Gateway, from the stack's own APIs only, never
on an entry point that moves money outside a packet but the operators' routes, under their prefix
and behind their own authorizer alone. The two funds entry points: `funds` (FundsFunction: top-ups,
the word on withdrawals) is invoked by the principal the `PaymentsPrincipal` parameter names,
through its resource-based policy (one exists whenever the parameter is set), and by nobody else;
`operator` (OperatorFunction: adjustments, holds, flags) by the operators' API alone
(`apigateway.amazonaws.com` from its `/ops/v1/` routes, and such a permission must exist): the
operator is the subject of the token the operators' authorizer verified, so no principal may
invoke it with a request context of its own making. The one managed invoke policy,
PaymentsInvokePolicy, grants `lambda:InvokeFunction` on FundsFunction alone. Which requests each
binary takes is the code's (`FundsEntry`), run on the binaries in
local/tests/it/events_on_binaries.rs. The consumers of the bus (`risk`: RiskFunction) are invoked by
EventBridge alone (`events.amazonaws.com`), and only from a rule of this stack on the stack's own
bus that targets them (`SourceArn` that rule's ARN, `rule/<bus>/<rule>`): a permission without a
`SourceArn` would let any rule, of any account, invoke them with events of its own making. No
other function may be invoked by EventBridge, and each consumer has such a permission.
https://docs.aws.amazon.com/lambda/latest/dg/access-control-resource-based.html
https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html

Which function a call is charged to: the calls of the tests' own SDK clients are charged to the
binary the test stands for; the calls the shipped binaries make themselves (grab's ledger built on
first use in its `main`, every sample event of events/ on every binary, under AWS's emulator and
in `sam local invoke`'s containers) are recorded on the wire by a proxy with a listener per binary
(local/src/call_proxy.rs, `"via": "binary"`) and charged to that binary; under the emulator each
binary signs with an access key id of its own name, and a call signed with another's fails here.
Every function the template ships must have calls of its own binary on that record.

Usage: permissions.py <calls directory> [<transformed directory>]; exit 1 on any problem.
"""

import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import iam  # noqa: E402
from cfn import Stack, parameter_sets, references  # noqa: E402

# The stack's one table and one bucket: every table and bucket the tests make stands for them.
TABLE, BUCKET = "PacketsTable", "ReportsBucket"
# The stack's secrets, by what the name of each test's secret holds (the part after ":secret:"
# of its ARN): it stands for the template's secret of that logical id.
SECRETS = {"membership-keys": "MembershipKeys", "passphrase-key": "PassphraseKey"}

TRANSACT_WRITE = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}

# What SAM attaches for Lambda itself: none of it is a call of the code.
MANAGED = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": "Lambda writes the function's logs",
    "arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole": "Lambda attaches the function's network interfaces in the VPC",
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess": "Lambda's X-Ray daemon sends the traces (XRayTracing=Active)",
}

# Granted, and used by no call of the code: (function, action) -> why.
EXPLAINED = {
    ("SettleFunction", "sqs:SendMessage"): "Lambda sends a failed asynchronous run to the on-failure destination with the function's role (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html)",
    ("FundsFunction", "sqs:SendMessage"): "Lambda sends a failed asynchronous run to the on-failure destination with the function's role (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html)",
    ("RiskFunction", "sqs:SendMessage"): "Lambda sends an event the function failed on every retry to the on-failure destination with the function's role (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html)",
}


def load_calls(directory):
    """Every recorded call, each once: {(binary, service, operation, resources): first test}."""
    calls = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
        with open(path) as lines:
            for line in lines:
                call = json.loads(line)
                key = (call["function"], call["service"], call["operation"], json.dumps(normalised(call["resources"]), sort_keys=True))
                calls.setdefault(key, call["test"])
    return calls


def load_binary_calls(directory):
    """What the shipped binaries themselves were seen calling on the wire (`"via": "binary"`, the
    recording proxy of local/src/call_proxy.rs): {binary: {operation, ...}}, and the calls signed
    with another binary's access key id than the listener's (a binary using credentials not its own)."""
    made, foreign = {}, []
    for path in sorted(glob.glob(os.path.join(directory, "*.jsonl"))):
        with open(path) as lines:
            for line in lines:
                call = json.loads(line)
                if call.get("via") != "binary":
                    continue
                made.setdefault(call["function"], set()).add(call["operation"])
                key_id = call.get("key_id")
                if key_id and key_id != call["function"] and key_id in BINARY_KEY_IDS:
                    foreign.append(f"{call['function']}'s {call['operation']} was signed with {key_id}'s access key id")
    return made, foreign


# The access key id each binary runs with under the emulator (local/tests/it/events_on_binaries.rs):
# its own name.
BINARY_KEY_IDS = {"send", "grab", "query", "settle", "funds", "operator", "risk"}


def normalised(resources):
    """A call's resources as the stack has them: each test's table is the table, its bucket the bucket."""
    out = []
    for resource in resources:
        resource = dict(resource)
        if "table" in resource:
            resource["table"] = TABLE
        if "bucket" in resource:
            resource["bucket"] = BUCKET
        if "secret" in resource:
            resource["secret"] = secret_of(resource["secret"])
        out.append(resource)
    return out


def secret_of(secret_id):
    """The logical id of the template's secret a test's SecretId (an ARN or a name) stands for, or
    the id itself, unchanged, when its name holds none or more than one of SECRETS' words."""
    name = secret_id.split(":secret:", 1)[-1]
    found = {logical_id for word, logical_id in SECRETS.items() if word in name}
    return found.pop() if len(found) == 1 else secret_id


def needed(stack, service, operation, resources):
    """The (IAM action, resource ARN) pairs one call needs on `stack`."""
    if service == "secretsmanager" and not resources:
        raise ValueError("a secret read recorded without its SecretId")
    pairs = []
    for resource in resources:
        if service == "dynamodb":
            arn = stack.arn(resource["table"])
            if operation == "TransactWriteItems":
                pairs.append((f"dynamodb:{TRANSACT_WRITE[resource['part']]}", arn))
            elif operation == "TransactGetItems":
                pairs.append(("dynamodb:GetItem", arn))
            elif resource.get("index"):
                pairs.append((f"dynamodb:{operation}", f"{arn}/index/{resource['index']}"))
            else:
                pairs.append((f"dynamodb:{operation}", arn))
        elif service == "s3":
            pairs.append((f"s3:{operation}", f"{stack.arn(resource['bucket'])}/{resource.get('key', '')}"))
        elif service == "secretsmanager" and operation == "GetSecretValue":
            secret = resource["secret"]
            if secret not in SECRETS.values() or secret not in stack.resources:
                raise ValueError(f"a secret the template does not hold: {secret} (its name must hold one of {', '.join(SECRETS)})")
            pairs.append((f"secretsmanager:{operation}", stack.arn(secret)))
        else:
            raise ValueError(f"no IAM mapping for {service}:{operation}")
    return pairs


def role_of(stack, function):
    """The statements of the function's role's inline policies, and its managed policy ARNs."""
    role = stack.resources[function]["Properties"]["Role"]["Fn::GetAtt"][0]
    properties = stack.resolve(stack.resources[role]["Properties"])
    statements = [s for policy in properties.get("Policies", []) for s in policy["PolicyDocument"]["Statement"]]
    return statements, properties.get("ManagedPolicyArns", [])


def binary_of(resource):
    return resource.get("Metadata", {}).get("BuildProperties", {}).get("Binary")


def check(stack, calls, label, made_by_binaries=None):
    """Every problem of one parameter set: calls refused, grants unused, policies unexplained, and
    a function whose shipped binary was never seen calling (`made_by_binaries`, when given)."""
    problems = []
    functions = stack.created("AWS::Lambda::Function")
    binaries = {binary_of(stack.resources[f]) for f in functions}
    if made_by_binaries is not None:
        for binary in sorted(binaries - set(made_by_binaries)):
            problems.append(f"[{label}] no call of the {binary} binary itself was recorded on the wire (local/tests/it/events_on_binaries.rs)")
    for (binary, _service, _operation, _resources) in calls:
        if binary not in binaries:
            problems.append(f"[{label}] calls recorded for a binary no function of the template runs: {binary}")
            break
    for function in sorted(functions):
        binary = binary_of(stack.resources[function])
        statements, managed = role_of(stack, function)
        used = set()
        mine = [(key, test) for key, test in calls.items() if key[0] == binary]
        if not mine:
            problems.append(f"[{label}] {function}: no call of {binary} was recorded (did its tests run with AWS_CALL_LOG?)")
        for (_, service, operation, resources), test in mine:
            try:
                pairs = needed(stack, service, operation, json.loads(resources))
            except ValueError as error:
                problems.append(f"[{label}] {function}: {operation} made by {test}: {error}")
                continue
            for action, arn in pairs:
                answer = iam.decide(statements, action, arn)
                if answer != iam.ALLOW:
                    problems.append(f"[{label}] {function}: {action} on {arn} is refused ({answer}): {operation} made by {test}")
                for statement in statements:
                    for grant in iam.grants(statement):
                        if iam.action_matches(grant[0], action) and iam.resource_matches(grant[1], arn):
                            used.add(grant)
        for statement in statements:
            for action, resource in iam.grants(statement):
                if (action, resource) not in used and (function, action) not in EXPLAINED:
                    problems.append(f"[{label}] {function}: {action} on {resource} is granted and no recorded call uses it")
        for arn in managed:
            if arn not in MANAGED:
                problems.append(f"[{label}] {function}: managed policy {arn} is not explained")
    return problems


# The entry points that move money outside a packet: no route of the app reaches them.
ENTRY_POINTS = {"funds", "operator"}
# The entry points a principal invokes through their resource-based policy, and the parameter
# naming that principal (the payments system): nobody else may.
PRINCIPALS = {"funds": "PaymentsPrincipal"}
# The entry points with routes of their own, under a path prefix, each behind an authorizer of its
# own (the operators' identity provider), never the app users': API Gateway, from those routes,
# is the only one that may invoke them.
OPERATORS_API = {"operator": ("/ops/v1/", "OperatorsAuthorizer")}
# Each managed invoke policy, and the one entry point it is for.
INVOKE_POLICIES = {"PaymentsInvokePolicy": "funds"}
# Each consumer of the ledger's events, and the bus (its logical id) whose rules alone may invoke it.
EVENT_CONSUMERS = {"risk": "EventBus"}
EVENTS = "events.amazonaws.com"


def function_named(stack, value):
    """The logical id of the function a Permission's FunctionName names: its name, its ARN, or an
    alias of it."""
    if isinstance(value, str) and ":function:" in value:
        value = value.split(":function:", 1)[1].split(":", 1)[0]
    name = stack.logical_id(value)
    if name and stack.resources[name]["Type"] == "AWS::Lambda::Alias":
        return function_named(stack, stack.properties(name)["FunctionName"])
    return name


def rule_invoking(stack, source, function):
    """Why EventBridge from `source` (a Permission's SourceArn) may not invoke `function`, a
    consumer of its bus, or None: `source` must be the ARN of a rule the parameter set creates, on
    the consumer's bus, with the function among its targets."""
    binary = binary_of(stack.resources[function])
    rules = [r for r in stack.created("AWS::Events::Rule") if stack.arn(r) == source]
    if not rules:
        return f"from {source or 'any rule of any account (no SourceArn)'}, not a rule of this stack"
    rule = rules[0]
    properties = stack.properties(rule)
    bus = EVENT_CONSUMERS[binary]
    if properties.get("EventBusName") not in (stack.ref(bus), stack.arn(bus)):
        return f"from {rule}, a rule on {properties.get('EventBusName', 'the default bus')}, not on {bus}"
    if not any(function_named(stack, target.get("Arn")) == function for target in properties.get("Targets", [])):
        return f"from {rule}, which does not target it"
    return None


def operators_route(binary, source_arn):
    """Whether an API Gateway permission on `binary` is for its operators' routes alone: its
    SourceArn names a stage, a method (or every method, `*`) and a path under the entry point's
    prefix."""
    prefix = OPERATORS_API.get(binary, (None,))[0]
    pattern = r"/\*/(GET|POST|PUT|PATCH|DELETE|\*)" + re.escape(prefix or "")
    return bool(prefix) and re.search(pattern, source_arn or "") is not None


def api_routes(stack):
    """Every route of the APIs the parameter set creates: [(route key, the binaries it reaches,
    its authorizers, the API with an OpenAPI body it is a resource of, or None)]. The app's routes
    are in its API's OpenAPI body; the operators' are AWS::ApiGatewayV2::Route resources, each
    reaching what its target integration's URI names."""
    functions = {f: binary_of(stack.resources[f]) for f in stack.created("AWS::Lambda::Function")}

    def reached(uri):
        text = json.dumps(uri)
        return {binary for function, binary in functions.items() if "${" + function + ".Arn}" in text or f'"{function}"' in text}

    routes = []
    for api in stack.created("AWS::ApiGatewayV2::Api"):
        body = stack.template["Resources"][api]["Properties"].get("Body", {})
        for path, operations in body.get("paths", {}).items():
            for method, operation in operations.items():
                authorizers = [name for requirement in operation.get("security", []) for name in requirement]
                uri = operation.get("x-amazon-apigateway-integration", {}).get("uri")
                routes.append((f"{method.upper()} {path}", reached(uri), authorizers, None))
    for route in stack.created("AWS::ApiGatewayV2::Route"):
        properties = stack.template["Resources"][route]["Properties"]
        targets = set()
        for name in references(properties.get("Target")):
            if stack.resources.get(name, {}).get("Type") == "AWS::ApiGatewayV2::Integration":
                targets |= reached(stack.resources[name]["Properties"].get("IntegrationUri"))
        authorizers = sorted(references(properties.get("AuthorizerId"))) if properties.get("AuthorizationType") == "JWT" else []
        (api,) = references(properties.get("ApiId"))
        with_body = api if "Body" in stack.resources[api].get("Properties", {}) else None
        routes.append((properties.get("RouteKey"), targets, authorizers, with_body))
    return routes


def check_operator_routes(stack, label):
    """Every route that reaches an entry point with an operators' API is under its prefix and
    behind its authorizer alone; no other route uses that authorizer or that prefix. No route is a
    resource of an API imported from an OpenAPI body: API Gateway drops such routes when an update
    reimports the body (https://github.com/aws/serverless-application-model/issues/1971)."""
    problems = []
    for route, targets, authorizers, with_body in api_routes(stack):
        path = route.split(" ", 1)[1]
        if with_body:
            problems.append(f"[{label}] {route} is a route resource of {with_body}, whose OpenAPI body an update reimports without it")
        for binary, (prefix, authorizer) in OPERATORS_API.items():
            ours = binary in targets
            if ours and (not path.startswith(prefix) or authorizers != [authorizer]):
                problems.append(f"[{label}] {route} reaches {binary} outside {prefix} or not behind {authorizer} alone ({authorizers})")
            if not ours and (path.startswith(prefix) or authorizer in authorizers):
                problems.append(f"[{label}] {route} is under {prefix} or behind {authorizer} and reaches {sorted(targets)}, not {binary}")
    return problems


def check_invokers(stack, label):
    """Every problem with who may invoke what, for one parameter set."""
    problems = []
    api = list(stack.created("AWS::ApiGatewayV2::Api"))
    granted = {}
    consumed, routed = set(), set()
    for permission in sorted(stack.created("AWS::Lambda::Permission")):
        properties = stack.properties(permission)
        function = function_named(stack, properties.get("FunctionName"))
        binary = binary_of(stack.resources[function]) if function else None
        principal, action = properties.get("Principal"), properties.get("Action")
        if action != "lambda:InvokeFunction":
            problems.append(f"[{label}] {permission}: grants {action}")
        if principal == "apigateway.amazonaws.com":
            source = properties.get("SourceArn", "")
            ours = any(f":{stack.physical_name(a)}/" in source for a in api)
            if not ours:
                problems.append(f"[{label}] {permission}: API Gateway may invoke {function} from {source or 'anywhere'}")
            if binary in ENTRY_POINTS and not operators_route(binary, source):
                problems.append(f"[{label}] {permission}: {function} moves money outside a packet and has a route")
            elif binary in OPERATORS_API and ours and action == "lambda:InvokeFunction":
                routed.add(binary)
            if binary in EVENT_CONSUMERS:
                problems.append(f"[{label}] {permission}: {function} consumes the bus's events and has a route")
            continue
        if principal == EVENTS:
            if binary not in EVENT_CONSUMERS:
                problems.append(f"[{label}] {permission}: EventBridge may invoke {function} ({binary})")
                continue
            why = rule_invoking(stack, properties.get("SourceArn"), function)
            if why:
                problems.append(f"[{label}] {permission}: EventBridge may invoke {function} ({binary}) {why}")
            elif action != "lambda:InvokeFunction":
                problems.append(f"[{label}] {permission}: EventBridge may {action} on {function} ({binary})")
            else:
                consumed.add(binary)
            continue
        expected = stack.parameters.get(PRINCIPALS.get(binary, ""), None)
        if binary not in PRINCIPALS or principal != expected or principal in ("*", ""):
            only = " (the operators' API alone may invoke it)" if binary in OPERATORS_API else ""
            problems.append(f"[{label}] {permission}: {principal} may invoke {function} ({binary}){only}")
        granted.setdefault(binary, set()).add((principal, action))
    for binary, parameter in PRINCIPALS.items():
        value = stack.parameters.get(parameter)
        if value and (value, "lambda:InvokeFunction") not in granted.get(binary, set()):
            problems.append(f"[{label}] {parameter} is set and no resource policy lets it invoke the {binary} entry point")
    functions = {binary_of(stack.resources[f]): f for f in stack.created("AWS::Lambda::Function")}
    for binary, bus in EVENT_CONSUMERS.items():
        if binary in functions and binary not in consumed:
            problems.append(f"[{label}] {functions[binary]} ({binary}): no permission lets a rule of {bus} invoke it (its events never arrive)")
    for binary, (prefix, _authorizer) in OPERATORS_API.items():
        if binary in functions and binary not in routed:
            problems.append(f"[{label}] {functions[binary]} ({binary}): no permission lets the operators' API invoke it from {prefix} (its routes never reach it)")
    for url in sorted(stack.created("AWS::Lambda::Url")):
        properties = stack.properties(url)
        target = function_named(stack, properties.get("TargetFunctionArn"))
        problems.append(f"[{label}] {url}: a function URL on {target} (AuthType {properties.get('AuthType')}): no function may have one")
    for policy in sorted(stack.created("AWS::IAM::ManagedPolicy")):
        binary = INVOKE_POLICIES.get(policy)
        statements = stack.properties(policy)["PolicyDocument"]["Statement"]
        for statement in statements:
            for action, resource in iam.grants(statement):
                if binary is None or function_named(stack, resource) != functions.get(binary):
                    problems.append(f"[{label}] {policy}: grants {action} on {resource}, not its own entry point")
                elif action != "lambda:InvokeFunction":
                    problems.append(f"[{label}] {policy}: grants {action}")
    return problems


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    calls = load_calls(argv[1])
    if not calls:
        print(f"permissions: no recorded calls under {argv[1]}")
        return 1
    made_by_binaries, foreign = load_binary_calls(argv[1])
    for problem in foreign:
        print(f"permissions: {problem}")
    print("permissions: calls the shipped binaries made, seen on the wire: "
          + ", ".join(f"{binary} {len(operations)} ({', '.join(sorted(operations))})" for binary, operations in sorted(made_by_binaries.items())))
    transformed = argv[2] if len(argv) > 2 else ".local/transformed"
    failures = 0
    for label, overrides in parameter_sets().items():
        with open(os.path.join(transformed, f"{label}.json")) as file:
            stack = Stack(json.load(file), overrides)
        problems = check(stack, calls, label, made_by_binaries) + check_invokers(stack, label) + check_operator_routes(stack, label)
        for problem in problems:
            print(f"permissions {problem}")
        failures += len(problems)
        if not problems:
            print(f"permissions [{label}]: every recorded call allowed, every grant used ({len(calls)} distinct calls), every invoker named")
    return 1 if failures or foreign else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
