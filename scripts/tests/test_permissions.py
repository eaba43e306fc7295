"""The derived-permission check (scripts/permissions.py) on a small transformed template."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import permissions  # noqa: E402
from cfn import Stack  # noqa: E402


def template(settle_actions, grab_condition=None):
    grab = {"Type": "AWS::Lambda::Function", "Metadata": {"BuildProperties": {"Binary": "grab"}},
            "Properties": {"Role": {"Fn::GetAtt": ["GrabRole", "Arn"]}}}
    if grab_condition:
        grab["Condition"] = grab_condition
    return {
        "Parameters": {"GrabCompute": {"Type": "String", "Default": "lambda"}},
        "Conditions": {"GrabOnLambda": {"Fn::Equals": [{"Ref": "GrabCompute"}, "lambda"]}},
        "Resources": {
            "PacketsTable": {"Type": "AWS::DynamoDB::Table"},
            "SettleFunction": {"Type": "AWS::Lambda::Function", "Metadata": {"BuildProperties": {"Binary": "settle"}},
                               "Properties": {"Role": {"Fn::GetAtt": ["SettleRole", "Arn"]}}},
            "SettleRole": {"Type": "AWS::IAM::Role", "Properties": {
                "ManagedPolicyArns": ["arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"],
                "Policies": [{"PolicyName": "p", "PolicyDocument": {"Statement": [
                    {"Effect": "Allow", "Action": settle_actions, "Resource": {"Fn::GetAtt": ["PacketsTable", "Arn"]}},
                    {"Effect": "Allow", "Action": ["dynamodb:Query"], "Resource": {"Fn::Sub": "${PacketsTable.Arn}/index/open"}},
                ]}}]}},
            "GrabFunction": grab,
            "GrabRole": {"Type": "AWS::IAM::Role", "Properties": {"Policies": [{"PolicyName": "p", "PolicyDocument": {"Statement": [
                {"Effect": "Allow", "Action": "dynamodb:Query", "Resource": {"Fn::GetAtt": ["PacketsTable", "Arn"]}}]}}]}},
        },
    }


CALLS = [
    {"function": "settle", "service": "dynamodb", "operation": "Query", "resources": [{"table": "RedPackets-a1", "index": "open"}], "test": "settle_and_query::sweep"},
    {"function": "settle", "service": "dynamodb", "operation": "BatchGetItem", "resources": [{"table": "RedPackets-b2"}], "test": "wallet::storm"},
    {"function": "settle", "service": "dynamodb", "operation": "TransactWriteItems",
     "resources": [{"table": "RedPackets-b2", "part": "Put"}, {"table": "RedPackets-b2", "part": "ConditionCheck"}], "test": "wallet::refund"},
    {"function": "grab", "service": "dynamodb", "operation": "Query", "resources": [{"table": "RedPackets-c3"}], "test": "recovery::fallback"},
]


def recorded(calls):
    directory = tempfile.mkdtemp()
    with open(os.path.join(directory, "t.jsonl"), "w") as file:
        for call in calls:
            file.write(json.dumps(call) + "\n")
    return permissions.load_calls(directory)


class DerivedPermissions(unittest.TestCase):
    def test_every_call_allowed_and_every_grant_used_passes(self):
        stack = Stack(template(["dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem"]))
        self.assertEqual(permissions.check(stack, recorded(CALLS), "t"), [])

    def test_a_missing_action_names_the_function_the_call_and_its_test(self):
        stack = Stack(template(["dynamodb:PutItem", "dynamodb:ConditionCheckItem"]))
        problems = permissions.check(stack, recorded(CALLS), "t")
        self.assertEqual(len(problems), 1, problems)
        for part in ["SettleFunction", "dynamodb:BatchGetItem", "table/PacketsTable", "wallet::storm", "ImplicitDeny"]:
            self.assertIn(part, problems[0])

    def test_a_transaction_needs_each_items_action(self):
        stack = Stack(template(["dynamodb:BatchGetItem", "dynamodb:PutItem"]))
        problems = permissions.check(stack, recorded(CALLS), "t")
        self.assertTrue(any("dynamodb:ConditionCheckItem" in p and "TransactWriteItems made by wallet::refund" in p for p in problems), problems)

    def test_a_grant_no_call_uses_is_named(self):
        stack = Stack(template(["dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem"]))
        problems = permissions.check(stack, recorded(CALLS), "t")
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("SettleFunction: dynamodb:DeleteItem", problems[0])
        self.assertIn("no recorded call uses it", problems[0])

    def test_a_query_of_an_index_needs_the_index(self):
        calls = CALLS + [{"function": "grab", "service": "dynamodb", "operation": "Query", "resources": [{"table": "T", "index": "history"}], "test": "x::y"}]
        stack = Stack(template(["dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem"]))
        problems = permissions.check(stack, recorded(calls), "t")
        self.assertTrue(any("GrabFunction: dynamodb:Query on" in p and "/index/history" in p for p in problems), problems)

    def test_a_function_the_parameters_leave_out_is_not_checked(self):
        stack = Stack(template(["dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem"], "GrabOnLambda"), {"GrabCompute": "managed-instances"})
        problems = permissions.check(stack, recorded(CALLS), "t")
        self.assertTrue(any("a binary no function of the template runs: grab" in p for p in problems), problems)
        self.assertFalse(any("GrabFunction" in p for p in problems), problems)

    def test_a_shipped_binary_never_seen_calling_on_the_wire_is_named(self):
        stack = Stack(template(["dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:ConditionCheckItem"]))
        from_settle = dict(CALLS[0], via="binary", key_id="settle")
        directory = tempfile.mkdtemp()
        with open(os.path.join(directory, "t.jsonl"), "w") as file:
            for call in CALLS + [from_settle]:
                file.write(json.dumps(call) + "\n")
        made, foreign = permissions.load_binary_calls(directory)
        self.assertEqual((made, foreign), ({"settle": {"Query"}}, []))
        problems = permissions.check(stack, permissions.load_calls(directory), "t", made)
        self.assertEqual(problems, ["[t] no call of the grab binary itself was recorded on the wire (local/tests/it/events_on_binaries.rs)"])

    def test_a_call_signed_with_another_binarys_key_is_named(self):
        directory = tempfile.mkdtemp()
        with open(os.path.join(directory, "t.jsonl"), "w") as file:
            file.write(json.dumps(dict(CALLS[3], via="binary", key_id="settle")) + "\n")
        _, foreign = permissions.load_binary_calls(directory)
        self.assertEqual(foreign, ["grab's Query was signed with settle's access key id"])



MOTO = "arn:aws:secretsmanager:us-east-1:123456789012:secret:"
MEMBERSHIP_ID = MOTO + "red-packets-it-membership-keys-ab12cd34-XyZ123"
PASSPHRASE_ID = MOTO + "red-packets-it-passphrase-key-ab12cd34-Qw9Er8"
TEMPLATE_MEMBERSHIP = MOTO + "MembershipKeys-AbCdEf"
TEMPLATE_PASSPHRASE = MOTO + "PassphraseKey-AbCdEf"


def get_secret(binary, secret_id, test="keys::rotation"):
    return {"function": binary, "service": "secretsmanager", "operation": "GetSecretValue", "resources": [{"secret": secret_id}], "test": test}


def secrets_template(grab_secrets=("PassphraseKey", "MembershipKeys"), send_secrets=("PassphraseKey",)):
    """The two secrets and three functions: send and grab granted GetSecretValue on the given
    secrets (their Refs, as template.yaml has them), query on nothing but the table."""
    def function(name, binary):
        return {"Type": "AWS::Lambda::Function", "Metadata": {"BuildProperties": {"Binary": binary}},
                "Properties": {"Role": {"Fn::GetAtt": [f"{name}Role", "Arn"]}}}

    def role(secrets):
        statements = [{"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": {"Fn::GetAtt": ["PacketsTable", "Arn"]}}]
        if secrets:
            # A logical id is granted by its Ref; anything else is an ARN written out.
            resources = [{"Ref": name} if ":" not in name else name for name in secrets]
            statements.append({"Effect": "Allow", "Action": ["secretsmanager:GetSecretValue"], "Resource": resources})
        return {"Type": "AWS::IAM::Role", "Properties": {"Policies": [{"PolicyName": "p", "PolicyDocument": {"Statement": statements}}]}}

    return {"Resources": {
        "PacketsTable": {"Type": "AWS::DynamoDB::Table"},
        "PassphraseKey": {"Type": "AWS::SecretsManager::Secret"},
        "MembershipKeys": {"Type": "AWS::SecretsManager::Secret"},
        "SendFunction": function("Send", "send"), "SendRole": role(send_secrets),
        "GrabFunction": function("Grab", "grab"), "GrabRole": role(grab_secrets),
        "QueryFunction": function("Query", "query"), "QueryRole": role(()),
    }}


def table_read(binary):
    return {"function": binary, "service": "dynamodb", "operation": "GetItem", "resources": [{"table": "RedPackets-x"}], "test": "t::read"}


SECRET_CALLS = [table_read("send"), table_read("grab"), table_read("query"),
                get_secret("send", PASSPHRASE_ID, "send::passphrase"),
                get_secret("grab", PASSPHRASE_ID, "grab::passphrase"),
                get_secret("grab", MEMBERSHIP_ID, "who_may_grab::rotation")]


class Secrets(unittest.TestCase):
    def test_a_secret_ref_is_its_arn_with_the_random_suffix(self):
        stack = Stack(secrets_template())
        self.assertEqual(stack.resolve({"Ref": "MembershipKeys"}), TEMPLATE_MEMBERSHIP)
        self.assertEqual(stack.logical_id(TEMPLATE_MEMBERSHIP), "MembershipKeys")
        self.assertEqual(stack.arn("PassphraseKey"), TEMPLATE_PASSPHRASE)

    def test_each_test_secret_stands_for_the_template_secret_its_name_holds(self):
        self.assertEqual(permissions.secret_of(MEMBERSHIP_ID), "MembershipKeys")
        self.assertEqual(permissions.secret_of(PASSPHRASE_ID), "PassphraseKey")
        self.assertEqual(permissions.secret_of("red-packets-it-membership-keys-1"), "MembershipKeys")
        self.assertEqual(permissions.secret_of(MOTO + "other-AbCdEf"), MOTO + "other-AbCdEf")
        # Every test's secret is one call: a test's random name does not multiply them.
        calls = recorded([get_secret("grab", MEMBERSHIP_ID), get_secret("grab", MOTO + "x-membership-keys-99-AbC123")])
        self.assertEqual(len(calls), 1)

    def test_the_grabs_reads_of_both_keys_and_the_sends_of_the_passphrase_key_pass(self):
        self.assertEqual(permissions.check(Stack(secrets_template()), recorded(SECRET_CALLS), "t"), [])

    def test_the_membership_keys_read_by_grab_without_the_grant_is_refused(self):
        problems = permissions.check(Stack(secrets_template(grab_secrets=("PassphraseKey",))), recorded(SECRET_CALLS), "t")
        self.assertEqual(problems, [f"[t] GrabFunction: secretsmanager:GetSecretValue on {TEMPLATE_MEMBERSHIP} is refused (ImplicitDeny): GetSecretValue made by who_may_grab::rotation"])

    def test_the_passphrase_key_read_by_query_is_refused(self):
        calls = SECRET_CALLS + [get_secret("query", PASSPHRASE_ID, "query::reads_a_key")]
        problems = permissions.check(Stack(secrets_template()), recorded(calls), "t")
        self.assertEqual(problems, [f"[t] QueryFunction: secretsmanager:GetSecretValue on {TEMPLATE_PASSPHRASE} is refused (ImplicitDeny): GetSecretValue made by query::reads_a_key"])

    def test_the_membership_keys_granted_to_send_and_read_by_no_call_of_it_is_named(self):
        problems = permissions.check(Stack(secrets_template(send_secrets=("PassphraseKey", "MembershipKeys"))), recorded(SECRET_CALLS), "t")
        self.assertEqual(problems, [f"[t] SendFunction: secretsmanager:GetSecretValue on {TEMPLATE_MEMBERSHIP} is granted and no recorded call uses it"])

    def test_grants_and_no_calls_yet_are_named_unused(self):
        # Calls recorded before the code read its keys at run time: every secret grant is unused.
        problems = permissions.check(Stack(secrets_template()), recorded(SECRET_CALLS[:3]), "t")
        self.assertEqual(len(problems), 3, problems)
        self.assertTrue(all("secretsmanager:GetSecretValue" in p and "no recorded call uses it" in p for p in problems), problems)

    def test_a_grant_on_the_name_without_its_suffix_is_refused(self):
        # What a policy written by hand as ...:secret:MembershipKeys would be: IAM evaluates
        # GetSecretValue on the whole ARN, six random characters included.
        by_name = secrets_template(grab_secrets=("PassphraseKey", MOTO + "MembershipKeys"))
        problems = permissions.check(Stack(by_name), recorded(SECRET_CALLS), "t")
        self.assertTrue(any(f"GrabFunction: secretsmanager:GetSecretValue on {TEMPLATE_MEMBERSHIP} is refused" in p for p in problems), problems)
        with_wildcard = secrets_template(grab_secrets=("PassphraseKey", MOTO + "MembershipKeys-??????"))
        self.assertEqual(permissions.check(Stack(with_wildcard), recorded(SECRET_CALLS), "t"), [])

    def test_a_secret_the_template_does_not_hold_is_named(self):
        calls = SECRET_CALLS + [get_secret("grab", MOTO + "someone-elses-AbC123", "grab::stray")]
        problems = permissions.check(Stack(secrets_template()), recorded(calls), "t")
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("GrabFunction: GetSecretValue made by grab::stray: a secret the template does not hold", problems[0])
        unnamed = dict(get_secret("grab", MEMBERSHIP_ID, "grab::unnamed"), resources=[])
        problems = permissions.check(Stack(secrets_template()), recorded(SECRET_CALLS + [unnamed]), "t")
        self.assertEqual(problems, ["[t] GrabFunction: GetSecretValue made by grab::unnamed: a secret read recorded without its SecretId"])


OPERATORS_API_SOURCE = {"Fn::Sub": "arn:aws:execute-api:${AWS::Region}:${AWS::AccountId}:${HttpApi}/*/*/ops/v1/*"}


def entry_points(permissions_by_name, policy_resources=("FundsFunction",), operators_api=True):
    """Two funds entry points with the given Permission resources and one invoke policy; the
    operators' API's permission on the operators' entry point unless `operators_api` is false."""
    def function(binary):
        return {"Type": "AWS::Lambda::Function", "Metadata": {"BuildProperties": {"Binary": binary}}, "Properties": {}}
    resources = {
        "HttpApi": {"Type": "AWS::ApiGatewayV2::Api"},
        "FundsFunction": function("funds"),
        "OperatorFunction": function("operator"),
        "SendFunction": function("send"),
        "PaymentsInvokePolicy": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": {"Statement": [
            {"Effect": "Allow", "Action": "lambda:InvokeFunction",
             "Resource": [{"Fn::GetAtt": [name, "Arn"]} for name in policy_resources]}]}}},
    }
    if operators_api:
        resources["OperatorsApiPermission"] = {"Type": "AWS::Lambda::Permission", "Properties": {
            "Action": "lambda:InvokeFunction", "FunctionName": {"Fn::GetAtt": ["OperatorFunction", "Arn"]},
            "Principal": "apigateway.amazonaws.com", "SourceArn": OPERATORS_API_SOURCE}}
    for name, (function_name, principal) in permissions_by_name.items():
        properties = {"Action": "lambda:InvokeFunction", "FunctionName": {"Fn::GetAtt": [function_name, "Arn"]}, "Principal": principal}
        if principal == "apigateway.amazonaws.com":
            properties["SourceArn"] = {"Fn::Sub": "arn:aws:execute-api:${AWS::Region}:${AWS::AccountId}:${HttpApi}/*/POST/x"}
        resources[name] = {"Type": "AWS::Lambda::Permission", "Properties": properties}
    return {
        "Parameters": {"PaymentsPrincipal": {"Type": "String", "Default": "210987654321"}},
        "Resources": resources,
    }


class Invokers(unittest.TestCase):
    def test_each_entry_point_invoked_by_its_own_principal_passes(self):
        stack = Stack(entry_points({"Payments": ("FundsFunction", {"Ref": "PaymentsPrincipal"}),
                                    "Route": ("SendFunction", "apigateway.amazonaws.com")}))
        self.assertEqual(permissions.check_invokers(stack, "t"), [])

    def test_anyone_else_on_an_entry_point_is_named(self):
        for principal in ("*", "111122223333", "arn:aws:iam::111122223333:role/operators"):
            stack = Stack(entry_points({"Payments": ("FundsFunction", {"Ref": "PaymentsPrincipal"}),
                                        "Other": ("FundsFunction", principal)}))
            problems = permissions.check_invokers(stack, "t")
            self.assertTrue(any("Other:" in p and "may invoke FundsFunction (funds)" in p for p in problems), problems)

    def test_the_payments_principal_on_the_operators_entry_point_is_named(self):
        stack = Stack(entry_points({"Payments": ("OperatorFunction", {"Ref": "PaymentsPrincipal"})}))
        problems = permissions.check_invokers(stack, "t")
        self.assertTrue(any("may invoke OperatorFunction (operator)" in p for p in problems), problems)
        self.assertTrue(any("PaymentsPrincipal is set and no resource policy" in p for p in problems), problems)

    def test_a_route_to_an_entry_point_is_named(self):
        stack = Stack(entry_points({"Payments": ("FundsFunction", {"Ref": "PaymentsPrincipal"}),
                                    "Route": ("FundsFunction", "apigateway.amazonaws.com")}))
        problems = permissions.check_invokers(stack, "t")
        self.assertTrue(any("moves money outside a packet and has a route" in p for p in problems), problems)

    def test_the_operators_api_may_invoke_the_operators_entry_point_under_its_prefix_alone(self):
        def problems(path):
            template = entry_points({"Payments": ("FundsFunction", {"Ref": "PaymentsPrincipal"}),
                                     "OperatorsApiPermission": ("OperatorFunction", "apigateway.amazonaws.com")})
            template["Resources"]["OperatorsApiPermission"]["Properties"]["SourceArn"] = {
                "Fn::Sub": "arn:aws:execute-api:${AWS::Region}:${AWS::AccountId}:${HttpApi}/*/" + path}
            return permissions.check_invokers(Stack(template), "t")
        self.assertEqual(problems("*/ops/v1/*"), [])
        self.assertEqual(problems("GET/ops/v1/*"), [])
        self.assertTrue(any("moves money outside a packet and has a route" in p for p in problems("*/*")), problems("*/*"))

    def test_an_invoke_policy_on_both_entry_points_is_named(self):
        stack = Stack(entry_points({"Payments": ("FundsFunction", {"Ref": "PaymentsPrincipal"})},
                                   policy_resources=("FundsFunction", "OperatorFunction")))
        problems = permissions.check_invokers(stack, "t")
        self.assertTrue(any("PaymentsInvokePolicy: grants lambda:InvokeFunction on" in p and "not its own entry point" in p
                            for p in problems), problems)

    def test_the_operators_entry_point_is_invoked_by_the_operators_api_alone(self):
        for principal in ("111122223333", "arn:aws:iam::111122223333:role/operators", "*", "events.amazonaws.com"):
            with self.subTest(principal=principal):
                stack = Stack(entry_points({"Payments": ("FundsFunction", {"Ref": "PaymentsPrincipal"}),
                                            "Operators": ("OperatorFunction", principal)}))
                problems = permissions.check_invokers(stack, "t")
                self.assertTrue(any(p.startswith("[t] Operators:") and "may invoke OperatorFunction (operator)" in p
                                    for p in problems), problems)

    def test_the_operators_entry_point_without_the_operators_apis_permission_is_named(self):
        stack = Stack(entry_points({"Payments": ("FundsFunction", {"Ref": "PaymentsPrincipal"})}, operators_api=False))
        self.assertEqual(permissions.check_invokers(stack, "t"),
                         ["[t] OperatorFunction (operator): no permission lets the operators' API invoke it from /ops/v1/ (its routes never reach it)"])
        template = entry_points({"Payments": ("FundsFunction", {"Ref": "PaymentsPrincipal"})})
        template["Resources"]["OperatorsApiPermission"]["Properties"]["SourceArn"] = (
            "arn:aws:execute-api:us-east-1:210987654321:someone-elses/*/*/ops/v1/*")
        problems = permissions.check_invokers(Stack(template), "t")
        self.assertTrue(any("OperatorsApiPermission: API Gateway may invoke OperatorFunction from" in p for p in problems), problems)
        self.assertTrue(any("no permission lets the operators' API invoke it" in p for p in problems), problems)

    def test_a_function_url_on_any_function_is_named(self):
        for function, auth in (("OperatorFunction", "AWS_IAM"), ("FundsFunction", "AWS_IAM"), ("SendFunction", "NONE")):
            with self.subTest(function=function):
                template = entry_points({"Payments": ("FundsFunction", {"Ref": "PaymentsPrincipal"})})
                template["Resources"]["Url"] = {"Type": "AWS::Lambda::Url", "Properties": {
                    "TargetFunctionArn": {"Fn::GetAtt": [function, "Arn"]}, "AuthType": auth}}
                self.assertEqual(permissions.check_invokers(Stack(template), "t"),
                                 [f"[t] Url: a function URL on {function} (AuthType {auth}): no function may have one"])

    def test_a_grant_to_invoke_a_function_url_is_named(self):
        template = entry_points({"Payments": ("FundsFunction", {"Ref": "PaymentsPrincipal"})})
        template["Resources"]["UrlPermission"] = {"Type": "AWS::Lambda::Permission", "Properties": {
            "Action": "lambda:InvokeFunctionUrl", "FunctionName": {"Fn::GetAtt": ["FundsFunction", "Arn"]},
            "FunctionUrlAuthType": "AWS_IAM", "Principal": {"Ref": "PaymentsPrincipal"}}}
        problems = permissions.check_invokers(Stack(template), "t")
        self.assertIn("[t] UrlPermission: grants lambda:InvokeFunctionUrl", problems)

    def test_an_invoke_policy_for_the_operators_entry_point_is_named(self):
        template = entry_points({"Payments": ("FundsFunction", {"Ref": "PaymentsPrincipal"})})
        template["Resources"]["OperatorsInvokePolicy"] = {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": {"Statement": [
            {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": {"Fn::GetAtt": ["OperatorFunction", "Arn"]}}]}}}
        problems = permissions.check_invokers(Stack(template), "t")
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("OperatorsInvokePolicy: grants lambda:InvokeFunction on", problems[0])
        self.assertIn("not its own entry point", problems[0])



def apis(route_properties):
    """The app's API (a route in its OpenAPI body, to send, behind the users' authorizer) and the
    operators' (no body, one integration to the operators' entry point), with route resources:
    name -> properties over an operators' route's."""
    def function(binary):
        return {"Type": "AWS::Lambda::Function", "Metadata": {"BuildProperties": {"Binary": binary}}, "Properties": {}}
    app_route = {"x-amazon-apigateway-integration": {"uri": {"Fn::Sub": "arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/${SendFunction.Arn}/invocations"}},
                 "security": [{"JwtAuthorizer": []}]}
    resources = {
        "HttpApi": {"Type": "AWS::ApiGatewayV2::Api", "Properties": {"Body": {"paths": {"/packets": {"post": app_route}}}}},
        "OperatorsApi": {"Type": "AWS::ApiGatewayV2::Api", "Properties": {"ProtocolType": "HTTP"}},
        "OperatorsIntegration": {"Type": "AWS::ApiGatewayV2::Integration", "Properties": {
            "ApiId": {"Ref": "OperatorsApi"}, "IntegrationUri": {"Fn::GetAtt": ["OperatorFunction", "Arn"]}}},
        "SendIntegration": {"Type": "AWS::ApiGatewayV2::Integration", "Properties": {
            "ApiId": {"Ref": "OperatorsApi"}, "IntegrationUri": {"Fn::GetAtt": ["SendFunction", "Arn"]}}},
        "SendFunction": function("send"),
        "OperatorFunction": function("operator"),
    }
    for name, properties in route_properties.items():
        resources[name] = {"Type": "AWS::ApiGatewayV2::Route", "Properties": {
            "ApiId": {"Ref": "OperatorsApi"}, "RouteKey": "GET /ops/v1/holds", "AuthorizationType": "JWT",
            "AuthorizerId": {"Ref": "OperatorsAuthorizer"}, "Target": {"Fn::Sub": "integrations/${OperatorsIntegration}"}, **properties}}
    return Stack({"Resources": resources})


class OperatorRoutes(unittest.TestCase):
    def test_operators_routes_as_resources_behind_their_authorizer_pass(self):
        stack = apis({"OpsHolds": {}})
        self.assertEqual(permissions.check_operator_routes(stack, "t"), [])
        self.assertEqual(sorted(route for route, *_ in permissions.api_routes(stack)), ["GET /ops/v1/holds", "POST /packets"])

    def test_an_operators_route_without_the_authorizer_is_named(self):
        for case, properties in {"no authorizer": {"AuthorizationType": "NONE"},
                                 "the users' authorizer": {"AuthorizerId": {"Ref": "JwtAuthorizer"}}}.items():
            with self.subTest(case):
                problems = permissions.check_operator_routes(apis({"OpsHolds": properties}), "t")
                self.assertTrue(any("GET /ops/v1/holds reaches operator outside /ops/v1/ or not behind OperatorsAuthorizer" in p
                                    for p in problems), problems)

    def test_a_route_under_the_operators_prefix_to_another_function_is_named(self):
        problems = permissions.check_operator_routes(apis({"OpsHolds": {"Target": {"Fn::Sub": "integrations/${SendIntegration}"}}}), "t")
        self.assertTrue(any("is under /ops/v1/ or behind OperatorsAuthorizer and reaches ['send']" in p for p in problems), problems)

    def test_a_route_resource_of_the_api_with_a_body_is_named(self):
        problems = permissions.check_operator_routes(apis({"OpsHolds": {"ApiId": {"Ref": "HttpApi"}}}), "t")
        self.assertEqual(problems, ["[t] GET /ops/v1/holds is a route resource of HttpApi, whose OpenAPI body an update reimports without it"])


def consumer(permissions_by_name, rules=None):
    """The risk function (a consumer of the bus), the stack's bus and rules, and the given
    Permission resources: name -> (function, principal, extra properties)."""
    def function(binary):
        return {"Type": "AWS::Lambda::Function", "Metadata": {"BuildProperties": {"Binary": binary}}, "Properties": {}}
    risk_target = [{"Id": "t", "Arn": {"Fn::GetAtt": ["RiskFunction", "Arn"]}}]
    if rules is None:
        # As SAM translates the function's EventBridgeRule event (<function><event>).
        rules = {"RiskFunctionLedgerEvents": {"EventBusName": {"Ref": "EventBus"}, "Targets": risk_target}}
    resources = {
        "EventBus": {"Type": "AWS::Events::EventBus", "Properties": {"Name": "red-packets-prod"}},
        "RiskFunction": function("risk"),
        "SendFunction": function("send"),
    }
    for name, properties in rules.items():
        resources[name] = {"Type": "AWS::Events::Rule", "Properties": properties}
    for name, (function_name, principal, extra) in permissions_by_name.items():
        resources[name] = {"Type": "AWS::Lambda::Permission", "Properties": {
            "Action": "lambda:InvokeFunction", "FunctionName": {"Ref": function_name}, "Principal": principal, **extra}}
    return {"Parameters": {}, "Resources": resources}


OWN_RULE = {"SourceArn": {"Fn::GetAtt": ["RiskFunctionLedgerEvents", "Arn"]}}


class EventConsumers(unittest.TestCase):
    def problems(self, permissions_by_name, rules=None):
        return permissions.check_invokers(Stack(consumer(permissions_by_name, rules)), "t")

    def test_the_stacks_own_rule_on_its_bus_passes(self):
        self.assertEqual(self.problems({"Rule": ("RiskFunction", "events.amazonaws.com", OWN_RULE)}), [])
        # The rule's ARN as a custom bus's rules have it: rule/<bus>/<rule>.
        stack = Stack(consumer({}))
        self.assertEqual(stack.arn("RiskFunctionLedgerEvents"), "arn:aws:events:us-east-1:123456789012:rule/EventBus/RiskFunctionLedgerEvents")

    def test_eventbridge_from_another_source_is_refused(self):
        others = {
            "no SourceArn": {},
            "another account's rule": {"SourceArn": "arn:aws:events:us-east-1:210987654321:rule/EventBus/RiskFunctionLedgerEvents"},
            "a rule this stack does not make": {"SourceArn": "arn:aws:events:us-east-1:123456789012:rule/EventBus/Other"},
            "every rule of the bus": {"SourceArn": "arn:aws:events:us-east-1:123456789012:rule/EventBus/*"},
        }
        for case, extra in others.items():
            with self.subTest(case):
                problems = self.problems({"Rule": ("RiskFunction", "events.amazonaws.com", OWN_RULE),
                                          "Other": ("RiskFunction", "events.amazonaws.com", extra)})
                self.assertEqual(len(problems), 1, problems)
                self.assertIn("Other: EventBridge may invoke RiskFunction (risk)", problems[0])
                self.assertIn("not a rule of this stack", problems[0])

    def test_a_rule_on_another_bus_or_not_targeting_it_is_refused(self):
        target = [{"Id": "t", "Arn": {"Fn::GetAtt": ["RiskFunction", "Arn"]}}]
        cases = {
            "the default bus": ({"Targets": target}, "a rule on the default bus, not on EventBus"),
            "a bus of its own": ({"EventBusName": "someone-elses", "Targets": target}, "not on EventBus"),
            "another target": ({"EventBusName": {"Ref": "EventBus"}, "Targets": [{"Id": "t", "Arn": {"Fn::GetAtt": ["SendFunction", "Arn"]}}]},
                               "which does not target it"),
        }
        for case, (rule, why) in cases.items():
            with self.subTest(case):
                problems = self.problems({"Rule": ("RiskFunction", "events.amazonaws.com", OWN_RULE)}, {"RiskFunctionLedgerEvents": rule})
                self.assertTrue(any("Rule: EventBridge may invoke RiskFunction (risk)" in p and why in p for p in problems), problems)
                self.assertTrue(any("no permission lets a rule of EventBus invoke it" in p for p in problems), problems)

    def test_eventbridge_on_another_function_is_refused(self):
        problems = self.problems({"Rule": ("RiskFunction", "events.amazonaws.com", OWN_RULE),
                                  "Send": ("SendFunction", "events.amazonaws.com", OWN_RULE)})
        self.assertEqual(problems, ["[t] Send: EventBridge may invoke SendFunction (send)"])

    def test_anyone_else_on_the_consumer_is_refused(self):
        for principal in ("*", "111122223333", "sns.amazonaws.com"):
            with self.subTest(principal=principal):
                problems = self.problems({"Rule": ("RiskFunction", "events.amazonaws.com", OWN_RULE),
                                          "Other": ("RiskFunction", principal, OWN_RULE)})
                self.assertTrue(any(f"Other: {principal} may invoke RiskFunction (risk)" in p for p in problems), problems)

    def test_a_consumer_without_its_rules_permission_is_named(self):
        problems = self.problems({})
        self.assertEqual(problems, ["[t] RiskFunction (risk): no permission lets a rule of EventBus invoke it (its events never arrive)"])


if __name__ == "__main__":
    unittest.main()
