"""The SAM transform itself, on template.yaml, for every parameter set a deployment may use.

`sam validate --lint` does not run the transform that `sam deploy` runs (AWS::Serverless-2016-10-31
in CloudFormation): this does, with the translator SAM CLI bundles (samtranslator), after putting
S3 locations where `sam package` puts them. Then it checks the translated template as
CloudFormation would read it (cfn-lint on the output, which carries no SAM resources any more),
and a few facts of our own: every function got its schedule, DLQ destination and policies, and the
risk function its rule on the stack's bus, its permission and its dead-letter queue. The
template's Rules, which CloudFormation checks before it creates anything and the translator does
not, are evaluated too: every parameter set here must pass them, and each of REFUSED_SETS must be
refused by its rule.
Exits non-zero on any error. Run by `make test` (scripts/test.sh).
"""

import copy
import json
import logging
import os
import re
import subprocess
import sys
import tempfile

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

import cfn
import entry_point_alarms
import iam

PARAMETER_SETS = {
    "defaults": {},
    "nodes": {"CacheMode": "nodes"},
    "scope": {"RequiredScope": "packets/use", "JwtIssuer": "https://issuer.example.com", "JwtAudience": "app-client"},
    "nodes-scope-wait": {"CacheMode": "nodes", "RequiredScope": "packets/use", "JwtIssuer": "https://issuer.example.com",
                         "JwtAudience": "app-client", "GrabWaitReplicas": "1"},
    "own-issuer": {"JwtIssuer": "https://issuer.example.com", "JwtAudience": "app-client"},
    "cors": {"CorsAllowedOrigins": "https://h5.example.com,https://m.example.com"},
    "webhook-no-wallet": {"WebhookUrl": "https://hooks.example.com/red-packets", "WebhookApiKey": "k", "Funds": "none"},
    "managed-grab": {"GrabCompute": "managed-instances", "GrabInstanceTypes": "c7g.xlarge,m7g.xlarge", "GrabMaxConcurrency": "128"},
    "payments-principal": {"PaymentsPrincipal": "arn:aws:iam::210987654321:role/payments"},
}


# Parameter sets the template's Rules must refuse, each with the rule that refuses it: CloudFormation
# checks Rules before it creates anything, and the translator does not, so they are evaluated here.
REFUSED_SETS = {
    "scope-own-pool": ({"RequiredScope": "packets/use"}, "RequiredScopeNeedsIssuer"),
    "issuer-no-audience": ({"JwtIssuer": "https://issuer.example.com"}, "JwtIssuerNeedsAudience"),
    "wait-serverless": ({"GrabWaitReplicas": "1"}, "GrabWaitNeedsNodes"),
}


def parameter_values(template, parameters):
    """Every parameter's value in a deployment: the given ones over the defaults, a
    CommaDelimitedList as a list."""
    values = {}
    for name, declared in template.get("Parameters", {}).items():
        value = parameters.get(name, declared.get("Default", ""))
        if declared.get("Type") == "CommaDelimitedList":
            value = [] if value == "" else [item.strip() for item in str(value).split(",")]
        values[name] = value
    return values


def rule_value(expression, values):
    """A Rules expression evaluated on `values`: the intrinsic functions the template's Rules use."""
    if isinstance(expression, dict) and len(expression) == 1:
        (function, argument), = expression.items()
        if function == "Ref":
            return values[argument]
        if function == "Fn::Equals":
            left, right = (rule_value(side, values) for side in argument)
            return str(left) == str(right)
        if function == "Fn::Not":
            return not rule_value(argument[0], values)
        if function == "Fn::And":
            return all(rule_value(part, values) for part in argument)
        if function == "Fn::Or":
            return any(rule_value(part, values) for part in argument)
        if function == "Fn::EachMemberEquals":
            members, expected = rule_value(argument[0], values), rule_value(argument[1], values)
            return all(member == expected for member in (members or [""]))
        raise ValueError(f"a Rules function this evaluator does not know: {function}")
    return expression


def refusing_rules(template, parameters):
    """The names of the template's Rules whose assertions fail for `parameters`, as
    CloudFormation would refuse the deployment."""
    values = parameter_values(template, parameters)
    refused = []
    for name, rule in template.get("Rules", {}).items():
        if "RuleCondition" in rule and not rule_value(rule["RuleCondition"], values):
            continue
        if not all(rule_value(assertion["Assert"], values) for assertion in rule["Assertions"]):
            refused.append(name)
    return refused


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
    expected = ["FundsFunction", "GrabFunction", "GrabManagedFunction", "OperatorFunction", "QueryFunction", "RiskFunction", "SendFunction", "SettleFunction"]
    if sorted(functions) != expected:
        problems.append(f"functions {sorted(functions)}")
    problems += check_grab_compute(resources)
    schedules = [n for n, r in resources.items() if r["Type"] == "AWS::Scheduler::Schedule"]
    if len(schedules) != 4:
        problems.append(f"{len(schedules)} schedules, expected 4 (two settle, reconciliation, trial balance)")
    buckets = {n: r for n, r in resources.items() if r["Type"] == "AWS::S3::Bucket"}
    if sorted(buckets) != ["ConsoleBucket", "ReportsBucket"]:
        problems.append(f"buckets {sorted(buckets)}, expected the reports' and the console's")
    elif "aws:kms" not in json.dumps(buckets["ReportsBucket"]) or "AES256" not in json.dumps(buckets["ConsoleBucket"]):
        problems.append("the reports bucket (KMS) or the console's (SSE-S3, which CloudFront's OAC reads) is not encrypted")
    problems += check_events_pipe(name, resources)
    invoke_configs = [r for r in resources.values() if r["Type"] == "AWS::Lambda::EventInvokeConfig"]
    if len(invoke_configs) != 3 or not all("OnFailure" in json.dumps(config) for config in invoke_configs):
        problems.append("settle's, funds' and risk's on-failure destinations are missing")
    problems += check_risk_trigger(resources)
    problems += check_rollouts(resources)
    problems += check_dashboard(resources)
    problems += check_capacity_provider_logs(cfn.Stack(output, PARAMETER_SETS[name]))
    # In us-east-1, where CloudFront's metrics are, and in another Region, where they are not.
    for region in (cfn.REGION, "eu-west-1"):
        problems += entry_point_alarms.problems(cfn.Stack(output, {**PARAMETER_SETS[name], "AWS::Region": region}))
    body = json.dumps(app_api_body(resources))
    if "JwtAuthorizer" not in body:
        problems.append("the JWT authorizer is not on the routes")
    return problems


def app_api_body(resources):
    """The OpenAPI body of the app's API, the SAM HttpApi (the operators' API has none: its
    routes are resources of their own)."""
    return resources.get("HttpApi", {}).get("Properties", {}).get("Body", {})


def check_grab_compute(resources):
    """GrabCompute picks one of the two grab functions: each under its condition, the standard
    one in the VPC, the managed one on the capacity provider (which holds the VPC), and the grab
    route's integration pointing at whichever exists."""
    problems = []
    standard, managed = resources["GrabFunction"], resources["GrabManagedFunction"]
    if (standard.get("Condition"), managed.get("Condition")) != ("GrabOnLambda", "GrabOnManagedInstances"):
        problems.append("the grab functions are not each under their GrabCompute condition")
    if "VpcConfig" not in standard["Properties"] or "VpcConfig" in managed["Properties"]:
        problems.append("the standard grab function must be in the VPC, the managed one on its capacity provider")
    config = managed["Properties"].get("CapacityProviderConfig", {}).get("LambdaManagedInstancesCapacityProviderConfig", {})
    if "capacity-provider:${GrabCapacityProvider}" not in json.dumps(config.get("CapacityProviderArn")):
        problems.append(f"the managed grab function's capacity provider: {config}")
    if config.get("PerExecutionEnvironmentMaxConcurrency") != {"Ref": "GrabMaxConcurrency"}:
        problems.append("the managed grab function's concurrency is not GrabMaxConcurrency")
    providers = [r for r in resources.values() if r["Type"] == "AWS::Lambda::CapacityProvider"]
    if len(providers) != 1 or providers[0].get("Condition") != "GrabOnManagedInstances" or "SubnetIds" not in json.dumps(providers[0]):
        problems.append("one capacity provider, in the private subnets, only with managed-instances")
    route = app_api_body(resources).get("paths", {}).get("/packets/{packet_id}/grab", {}).get("post", {})
    uri = json.dumps(route.get("x-amazon-apigateway-integration", {}).get("uri"))
    if "GrabOnManagedInstances" not in uri or "GrabManagedFunctionAliaslive" not in uri or "GrabFunctionAliaslive" not in uri:
        problems.append(f"the grab route does not pick its function by GrabCompute: {uri}")
    if "JwtAuthorizer" not in json.dumps(route.get("security")):
        problems.append("the grab route lost its authorizer")
    return problems


# What the capacity provider's operator role needs for Lambda to deliver the provider's system
# logs: "Sending capacity provider system logs to CloudWatch Logs", "Required IAM permissions",
# https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-monitoring-cwl.html
CAPACITY_PROVIDER_LOG_ACTIONS = ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"]


def check_capacity_provider_logs(stack):
    """Each capacity provider's system logs reach its log group: the group Lambda writes to
    (TelemetryConfig's, or /aws/lambda/capacity-provider/<name>) is one of the stack's, and the
    operator role the provider is given allows each documented action on it, by IAM's rules
    (scripts/iam.py) on its inline policies: CreateLogGroup on the group, as IAM policies name it
    (`…:log-group:<name>:*`), CreateLogStream and PutLogEvents on the provider's stream
    (`<name>/managed-instances`, "Configuring CloudWatch log groups",
    https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-cwl-configure.html)."""
    problems = []
    groups = {stack.physical_name(group): group for group in stack.created("AWS::Logs::LogGroup")}
    for provider in stack.created("AWS::Lambda::CapacityProvider"):
        properties = stack.properties(provider)
        name = properties["CapacityProviderName"]
        log_group = properties.get("TelemetryConfig", {}).get("LoggingConfig", {}).get(
            "LogGroup", f"/aws/lambda/capacity-provider/{name}")
        if log_group not in groups:
            problems.append(f"{provider} writes its logs to {log_group}, a log group the stack does not make")
            continue
        role = stack.logical_id(properties["PermissionsConfig"]["CapacityProviderOperatorRoleArn"].split("/")[-1])
        if role is None:
            problems.append(f"{provider}: its operator role is not one of the stack's")
            continue
        statements = [statement for policy in stack.properties(role).get("Policies", [])
                      for statement in policy["PolicyDocument"]["Statement"]]
        group_arn = stack.get_att(groups[log_group], "Arn")
        stream_arn = f"{group_arn[:-len(':*')]}:log-stream:{name}/managed-instances"
        for action in CAPACITY_PROVIDER_LOG_ACTIONS:
            arn = group_arn if action == "logs:CreateLogGroup" else stream_arn
            if iam.decide(statements, action, arn) != iam.ALLOW:
                problems.append(f"{provider}: its operator role {role} does not allow {action} on {arn}")
    return problems


def check_rollouts(resources):
    """send, grab and query deploy through an alias and CodeDeploy, each rolled back by its
    server-errors alarm (its 5xx, counted from its logs); every function's logs are kept for a
    bounded time."""
    problems = []
    groups = [r for r in resources.values() if r["Type"] == "AWS::CodeDeploy::DeploymentGroup"]
    if len(groups) != 3:
        problems.append(f"{len(groups)} deployment groups, expected 3 (send, grab, query)")
    for group in groups:
        alarms = json.dumps(group["Properties"].get("AlarmConfiguration", {}))
        if "ServerErrorsAlarm" not in alarms:
            problems.append(f"a deployment group without its 5xx alarm: {alarms}")
    retained = {json.dumps(r["Properties"]["LogGroupName"]) for r in resources.values() if r["Type"] == "AWS::Logs::LogGroup" and "RetentionInDays" in r["Properties"]}
    for function in ["SendFunction", "GrabFunction", "QueryFunction", "SettleFunction", "FundsFunction", "RiskFunction"]:
        if not any(function in name for name in retained):
            problems.append(f"{function} has no log group with a retention")
    return problems


def check_dashboard(resources):
    """The dashboard's body is JSON once CloudFormation substitutes its references, and every
    widget has what CloudWatch requires of it."""
    import re

    dashboards = [r for r in resources.values() if r["Type"] == "AWS::CloudWatch::Dashboard"]
    if len(dashboards) != 1:
        return [f"{len(dashboards)} dashboards, expected 1"]
    substituted = dashboards[0]["Properties"]["DashboardBody"]["Fn::Sub"]
    body = substituted[0] if isinstance(substituted, list) else substituted
    try:
        widgets = json.loads(re.sub(r"\$\{[^}]+\}", "x", body))["widgets"]
    except (ValueError, KeyError) as error:
        return [f"the dashboard's body is not JSON: {error}"]
    return [f"a widget without its properties: {w}" for w in widgets if "type" not in w or "properties" not in w]


EVENT_FIELDS = ["event_id", "type", "packet_id", "user", "amount_cents", "occurred_at", "reference", "proposed_by", "approved_by", "chat_id", "currency"]

# What the risk function reads from the bus (its EventBridgeRule's pattern).
# The hourly view's types and the pattern rules' (functions/risk/src/handler.rs, event_types;
# local/tests/it/operators_api.rs checks the template's rule against it).
RISK_PATTERN = {
    "source": ["red-packets"],
    "detail-type": [
        "PacketSent", "PacketFinished", "GrabRecorded", "PacketRefunded", "GrabRevoked",
        "WithdrawalRequested", "WithdrawalPaid", "WithdrawalFailed",
    ],
}


def check_risk_trigger(resources):
    """The risk function's trigger as SAM translates its EventBridgeRule event: one rule on the
    stack's bus with the pattern of the events it reads, the function its only target, with a
    retry policy and the events dead-letter queue; a permission for that rule alone
    (events.amazonaws.com, the rule's ARN as its SourceArn); the queue's policy letting that rule
    send to it; the function's failed events to the same queue (its on-failure destination)."""
    problems = []
    target_of = {"Fn::GetAtt": ["RiskFunction", "Arn"]}
    rules = {n: r for n, r in resources.items() if r["Type"] == "AWS::Events::Rule" and target_of in [t.get("Arn") for t in r["Properties"].get("Targets", [])]}
    if len(rules) != 1:
        return [f"the risk function is the target of {sorted(rules)}, expected one rule"]
    (rule_id, rule), = rules.items()
    properties = rule["Properties"]
    if properties.get("EventBusName") != {"Ref": "EventBus"}:
        problems.append(f"the risk rule is on {properties.get('EventBusName')}, not the stack's bus")
    if properties.get("EventPattern") != RISK_PATTERN:
        problems.append(f"the risk rule's pattern is {properties.get('EventPattern')}")
    targets = properties["Targets"]
    if len(targets) != 1:
        problems.append(f"the risk rule has {len(targets)} targets")
    target = targets[0]
    if target.get("DeadLetterConfig") != {"Arn": {"Fn::GetAtt": ["EventsDeadLetters", "Arn"]}}:
        problems.append(f"the risk rule's dead-letter queue is {target.get('DeadLetterConfig')}")
    if "MaximumRetryAttempts" not in target.get("RetryPolicy", {}):
        problems.append("the risk rule's target has no retry policy")
    rule_arn = {"Fn::GetAtt": [rule_id, "Arn"]}
    permissions = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::Permission"
                   and r["Properties"].get("FunctionName") in ({"Ref": "RiskFunction"}, target_of)]
    if [(p.get("Principal"), p.get("Action"), p.get("SourceArn")) for p in permissions] != [("events.amazonaws.com", "lambda:InvokeFunction", rule_arn)]:
        problems.append(f"the risk function's permissions are {permissions}, expected one for EventBridge from {rule_id}")
    policy = json.dumps(resources["EventsDeadLettersPolicy"]["Properties"]["PolicyDocument"])
    if json.dumps(rule_arn) not in policy:
        problems.append(f"EventsDeadLettersPolicy does not let {rule_id} send to the queue")
    configs = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::EventInvokeConfig" and r["Properties"].get("FunctionName") == {"Ref": "RiskFunction"}]
    destination = {"Fn::GetAtt": ["EventsDeadLetters", "Arn"]}
    if len(configs) != 1 or configs[0].get("DestinationConfig", {}).get("OnFailure", {}).get("Destination") != destination:
        problems.append(f"the risk function's failed events do not go to the events dead-letter queue: {configs}")
    return problems


def check_events_pipe(name, resources):
    """The events Pipe as CloudFormation receives it: it reads the table's stream, keeps INSERTs
    that carry an event, a packet's finalisation and a withdrawal's resolution (each filter valid
    JSON), and its template
    builds every field of the event schemas. The filters and the template are applied to real
    stream records of DynamoDB Local in local/tests/it/events_stream.rs; the webhook's resources
    exist only with a WebhookUrl."""
    problems = []
    pipes = [r for r in resources.values() if r["Type"] == "AWS::Pipes::Pipe"]
    if len(pipes) != 1:
        return [f"{len(pipes)} pipes, expected 1"]
    pipe = pipes[0]["Properties"]
    if pipe.get("Source") != {"Fn::GetAtt": ["PacketsTable", "StreamArn"]}:
        problems.append(f"the pipe reads {pipe.get('Source')}, not the table's stream")
    filters = pipe["SourceParameters"]["FilterCriteria"]["Filters"]
    patterns = [json.loads(f["Pattern"]) for f in filters]
    if sorted(p["eventName"][0] for p in patterns) != ["INSERT", "MODIFY", "MODIFY"]:
        problems.append(f"pipe filters {patterns}")
    template = pipe["TargetParameters"]["InputTemplate"]
    if not isinstance(template, dict) or "Fn::Sub" not in template:
        return problems + [f"the pipe's template names no stack currency: {template}"]
    text, variables = template["Fn::Sub"]
    if variables.get("Exponent") != {"Fn::FindInMap": ["Currencies", {"Ref": "Currency"}, "Exponent"]}:
        problems.append(f"the pipe's currency exponent is {variables}")
    text = text.replace("${Currency}", "CNY").replace("${Exponent}", "2")
    built = json.loads(text.replace("<", "").replace(">", ""))
    if built.get("currency") != {"code": "CNY", "exponent": 2}:
        problems.append(f"the pipe's template builds the currency {built.get('currency')}")
    if sorted(built) != sorted(EVENT_FIELDS):
        problems.append(f"the pipe's template builds {sorted(built)}")
    table = resources["PacketsTable"]["Properties"]
    if table.get("StreamSpecification", {}).get("StreamViewType") != "NEW_AND_OLD_IMAGES":
        problems.append("the table's stream is not NEW_AND_OLD_IMAGES")
    webhook = [n for n, r in resources.items() if n.startswith("Webhook") and r.get("Condition") != "HasWebhook"]
    if webhook:
        problems.append(f"webhook resources without the HasWebhook condition: {webhook}")
    return problems


def lint_problems(translated):
    """cfn-lint on a translated template (JSON text): its errors, none for warnings alone."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        file.write(translated)
    lint = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "cfn-lint"), "--regions", "us-east-1", "--", file.name],
        capture_output=True,
        text=True,
    )
    os.unlink(file.name)
    if lint.returncode not in (0, 4, 8, 12):  # 2 = errors; 4 warnings, 8 informational
        return ["cfn-lint on the translated template:\n" + lint.stdout + lint.stderr]
    return []


def main():
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("samtranslator").setLevel(logging.ERROR)  # its metrics' noise
    source = yaml_parse(open("template.yaml").read())
    failures = 0
    linted = {}  # each distinct translated template, its cfn-lint problems
    for name, (parameters, rule) in REFUSED_SETS.items():
        refused = refusing_rules(source, parameters)
        if refused != [rule]:
            print(f"rules [{name}]: {parameters} refused by {refused}, expected {rule} alone")
            failures += 1
    for name, parameters in PARAMETER_SETS.items():
        refused = refusing_rules(source, parameters)
        if refused:
            print(f"rules [{name}]: a deployment the template's Rules refuse ({', '.join(refused)})")
            failures += 1
            continue
        try:
            output = transform(packaged(source), parameters, NoManagedPolicies())
        except Exception as error:  # the translator raises several exception types
            causes = getattr(error, "causes", None) or [error]
            for cause in causes:
                print(f"transform [{name}]: {getattr(cause, 'message', cause)}")
            failures += 1
            continue
        problems = check_translated(name, output)
        # Kept for checkov (scripts/test.sh), which reads the template as CloudFormation gets it.
        os.makedirs(".local/transformed", exist_ok=True)
        with open(f".local/transformed/{name}.json", "w") as kept:
            json.dump(output, kept)
        # The parameter sets mostly leave the same CloudFormation (conditions stay in it): each
        # distinct output is linted once, about 4 s of cfn-lint's CPU apiece.
        text = json.dumps(output, sort_keys=True)
        if text not in linted:
            linted[text] = lint_problems(text)
        problems += linted[text]
        for problem in problems:
            print(f"transform [{name}]: {problem}")
        failures += bool(problems)
        if not problems:
            print(f"transform [{name}]: {len(output['Resources'])} CloudFormation resources, cfn-lint clean")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
