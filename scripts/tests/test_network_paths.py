"""scripts/network_paths.py on small hand-written templates: which paths count, which do not."""

import copy
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import template_parts  # noqa: E402
from network_paths import Stack, problems_of, unknown_functions  # noqa: E402

PUT = {"function": "funds", "service": "s3", "operation": "PutObject", "resources": [{"bucket": "b", "key": "k"}], "test": "funds::writes_the_trial_balance"}
REF = {"Ref": "FunctionSecurityGroup"}

BASE = {
    "Parameters": {**template_parts.PARAMETERS, "Tracing": {"Type": "String", "Default": "PassThrough"}},
    "Conditions": template_parts.CONDITIONS,
    "Resources": {
        "Vpc": {"Type": "AWS::EC2::VPC", "Properties": {"CidrBlock": "10.0.0.0/16"}},
        "SubnetA": {"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.0.1.0/24"}},
        "RouteTable": {"Type": "AWS::EC2::RouteTable", "Properties": {"VpcId": {"Ref": "Vpc"}}},
        "OtherRouteTable": {"Type": "AWS::EC2::RouteTable", "Properties": {"VpcId": {"Ref": "Vpc"}}},
        "SubnetARoutes": {"Type": "AWS::EC2::SubnetRouteTableAssociation", "Properties": {"SubnetId": {"Ref": "SubnetA"}, "RouteTableId": {"Ref": "RouteTable"}}},
        "FunctionSecurityGroup": {
            "Type": "AWS::EC2::SecurityGroup",
            "Properties": {"GroupDescription": "f", "SecurityGroupEgress": [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "0.0.0.0/0"}]},
        },
        "OtherSecurityGroup": {"Type": "AWS::EC2::SecurityGroup", "Properties": {"GroupDescription": "o"}},
        "FundsFunction": {
            "Type": "AWS::Lambda::Function",
            "Metadata": {"BuildProperties": {"Binary": "funds"}},
            "Properties": {
                "VpcConfig": {"SubnetIds": [{"Ref": "SubnetA"}], "SecurityGroupIds": [REF]},
                "TracingConfig": {"Mode": {"Ref": "Tracing"}},
            },
        },
    },
}


def template(**resources):
    """BASE with `resources` added (a None removes one)."""
    result = copy.deepcopy(BASE)
    for name, resource in resources.items():
        if resource is None:
            del result["Resources"][name]
        else:
            result["Resources"][name] = resource
    return result


def gateway(service="s3", table="RouteTable"):
    return {
        "Type": "AWS::EC2::VPCEndpoint",
        "Properties": {"VpcId": {"Ref": "Vpc"}, "ServiceName": {"Fn::Sub": "com.amazonaws.${AWS::Region}." + service}, "VpcEndpointType": "Gateway", "RouteTableIds": [{"Ref": table}]},
    }


def interface(service="s3", private_dns=True, group="EndpointSecurityGroup"):
    return {
        "Type": "AWS::EC2::VPCEndpoint",
        "Properties": {
            "VpcId": {"Ref": "Vpc"},
            "ServiceName": {"Fn::Sub": "com.amazonaws.${AWS::Region}." + service},
            "VpcEndpointType": "Interface",
            "PrivateDnsEnabled": private_dns,
            "SubnetIds": [{"Ref": "SubnetA"}],
            "SecurityGroupIds": [{"Ref": group}],
        },
    }


def endpoint_group(source=REF):
    return {
        "Type": "AWS::EC2::SecurityGroup",
        "Properties": {"GroupDescription": "e", "SecurityGroupIngress": [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "SourceSecurityGroupId": source}]},
    }


def problems(source, calls=(PUT,), parameters=None, set_name="defaults"):
    return problems_of(set_name, Stack(source, parameters or {}), list(calls))


class Paths(unittest.TestCase):
    def test_no_path_at_all_fails(self):
        self.assertEqual(len(problems(template())), 1)

    def test_a_gateway_endpoint_on_the_subnets_route_table_passes(self):
        self.assertEqual(problems(template(S3Endpoint=gateway())), [])

    def test_a_gateway_endpoint_on_another_route_table_fails(self):
        [problem] = problems(template(S3Endpoint=gateway(table="OtherRouteTable")))
        self.assertIn("gateway endpoint S3Endpoint not on RouteTable", problem)

    def test_a_gateway_endpoint_for_another_service_fails(self):
        self.assertEqual(len(problems(template(DynamoDbEndpoint=gateway("dynamodb")))), 1)

    def test_a_gateway_endpoint_the_security_group_cannot_reach_fails(self):
        source = template(S3Endpoint=gateway())
        source["Resources"]["FunctionSecurityGroup"]["Properties"]["SecurityGroupEgress"] = [{"IpProtocol": "tcp", "FromPort": 6379, "ToPort": 6380, "CidrIp": "10.0.0.0/16"}]
        [problem] = problems(source)
        self.assertIn("do not let 443 out", problem)

    def test_an_interface_endpoint_with_private_dns_open_to_the_functions_group_passes(self):
        self.assertEqual(problems(template(S3Endpoint=interface(), EndpointSecurityGroup=endpoint_group())), [])

    def test_an_interface_endpoint_without_private_dns_fails(self):
        [problem] = problems(template(S3Endpoint=interface(private_dns=False), EndpointSecurityGroup=endpoint_group()))
        self.assertIn("interface endpoint S3Endpoint without private DNS", problem)

    def test_an_interface_endpoint_whose_group_does_not_admit_the_functions_fails(self):
        [problem] = problems(template(S3Endpoint=interface(), EndpointSecurityGroup=endpoint_group({"Ref": "OtherSecurityGroup"})))
        self.assertIn("do not admit 443 from FunctionSecurityGroup", problem)

    def test_an_interface_endpoint_admitting_the_subnets_cidr_passes(self):
        group = endpoint_group()
        group["Properties"]["SecurityGroupIngress"] = [{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "CidrIp": "10.0.0.0/16"}]
        self.assertEqual(problems(template(S3Endpoint=interface(), EndpointSecurityGroup=group)), [])

    def test_a_nat_route_passes(self):
        route = {"Type": "AWS::EC2::Route", "Properties": {"RouteTableId": {"Ref": "RouteTable"}, "DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": {"Ref": "Nat"}}}
        self.assertEqual(problems(template(DefaultRoute=route, Nat={"Type": "AWS::EC2::NatGateway", "Properties": {}})), [])

    def test_a_nat_route_in_another_route_table_fails(self):
        route = {"Type": "AWS::EC2::Route", "Properties": {"RouteTableId": {"Ref": "OtherRouteTable"}, "DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": {"Ref": "Nat"}}}
        self.assertEqual(len(problems(template(DefaultRoute=route, Nat={"Type": "AWS::EC2::NatGateway", "Properties": {}}))), 1)

    def test_the_failure_names_the_set_function_service_and_call(self):
        [problem] = problems(template(), set_name="managed-grab")
        for part in ["[managed-grab]", "FundsFunction (funds)", "no path to s3", "PutObject in funds::writes_the_trial_balance"]:
            self.assertIn(part, problem)

    def test_a_function_outside_the_vpc_needs_no_path(self):
        source = template()
        del source["Resources"]["FundsFunction"]["Properties"]["VpcConfig"]
        self.assertEqual(problems(source), [])


class Conditions(unittest.TestCase):
    def test_a_false_condition_removes_the_function(self):
        source = template()
        source["Resources"]["FundsFunction"]["Condition"] = "On"
        self.assertEqual(len(problems(source)), 1)
        self.assertEqual(problems(source, parameters={"Mode": "off"}), [])

    def test_a_false_condition_removes_the_endpoint(self):
        endpoint = gateway()
        endpoint["Condition"] = "Off"
        self.assertEqual(len(problems(template(S3Endpoint=endpoint))), 1)
        self.assertEqual(problems(template(S3Endpoint=endpoint), parameters={"Mode": "off"}), [])

    def test_not_and_or_join_and_numbers(self):
        stack = Stack(template(), {})
        self.assertEqual([stack.condition(c) for c in ["On", "Off", "Unreserved", "NoTypes", "OnAndUnreserved", "OffOrNoTypes"]], [True, False, True, True, True, True])
        stack = Stack(template(), {"Mode": "off", "Reserved": "2", "Types": "c7g.xlarge,m7g.xlarge"})
        self.assertEqual([stack.condition(c) for c in ["On", "Off", "Unreserved", "NoTypes", "OnAndUnreserved", "OffOrNoTypes"]], [False, True, False, False, False, True])

    def test_fn_if_picks_by_condition(self):
        source = template()
        source["Resources"]["FundsFunction"]["Properties"]["VpcConfig"]["SubnetIds"] = {"Fn::If": ["On", [{"Ref": "SubnetA"}], {"Ref": "AWS::NoValue"}]}
        self.assertEqual(len(problems(source)), 1)
        self.assertEqual(problems(source, parameters={"Mode": "off"}), [])


class WhatLambdaNeeds(unittest.TestCase):
    def test_an_active_trace_needs_x_ray(self):
        [problem] = problems(template(S3Endpoint=gateway()), parameters={"Tracing": "Active"})
        self.assertIn("no path to xray, needed by the X-Ray daemon", problem)
        source = template(S3Endpoint=gateway(), XRayEndpoint=interface("xray"), EndpointSecurityGroup=endpoint_group())
        self.assertEqual(problems(source, parameters={"Tracing": "Active"}), [])

    def test_a_capacity_provider_needs_logs_and_its_functions_calls(self):
        provider = {"Type": "AWS::Lambda::CapacityProvider", "Properties": {"VpcConfig": {"SubnetIds": [{"Ref": "SubnetA"}], "SecurityGroupIds": [REF]}}}
        managed = {
            "Type": "AWS::Lambda::Function",
            "Metadata": {"BuildProperties": {"Binary": "grab"}},
            "Properties": {"CapacityProviderConfig": {"LambdaManagedInstancesCapacityProviderConfig": {"CapacityProviderArn": {"Fn::Sub": "arn:aws:lambda:us-east-1:1:capacity-provider:${Provider}"}}}},
        }
        query = {"function": "grab", "service": "dynamodb", "operation": "Query", "resources": [], "test": "grab::ledger"}
        found = problems(template(S3Endpoint=gateway(), Provider=provider, GrabManagedFunction=managed), calls=[PUT, query])
        self.assertEqual(len(found), 2, found)
        self.assertTrue(any("Provider (grab): no path to dynamodb, needed by Query in grab::ledger" in p for p in found))
        self.assertTrue(any("Provider (grab): no path to logs, needed by Lambda Managed Instances" in p for p in found))
        fixed = template(S3Endpoint=gateway(), DynamoDbEndpoint=gateway("dynamodb"), LogsEndpoint=interface("logs"), EndpointSecurityGroup=endpoint_group(), Provider=provider, GrabManagedFunction=managed)
        self.assertEqual(problems(fixed, calls=[PUT, query]), [])

    def test_a_secret_read_at_run_time_needs_the_secrets_manager_interface_endpoint(self):
        read = {"function": "funds", "service": "secretsmanager", "operation": "GetSecretValue",
                "resources": [{"secret": "arn:aws:secretsmanager:us-east-1:123456789012:secret:red-packets-it-passphrase-key-1-AbC123"}],
                "test": "keys::read_on_first_need"}
        [problem] = problems(template(S3Endpoint=gateway()), calls=[PUT, read])
        self.assertIn("FundsFunction (funds): no path to secretsmanager, needed by GetSecretValue in keys::read_on_first_need", problem)
        self.assertIn("no interface endpoint for secretsmanager", problem)
        endpoint = dict(S3Endpoint=gateway(), SecretsManagerEndpoint=interface("secretsmanager"), EndpointSecurityGroup=endpoint_group())
        self.assertEqual(problems(template(**endpoint), calls=[PUT, read]), [])
        # The SDK calls secretsmanager.<region>.amazonaws.com: only private DNS sends it to the endpoint.
        without_dns = dict(endpoint, SecretsManagerEndpoint=interface("secretsmanager", private_dns=False))
        [problem] = problems(template(**without_dns), calls=[PUT, read])
        self.assertIn("interface endpoint SecretsManagerEndpoint without private DNS", problem)
        # An endpoint for another service is no path.
        other = dict(endpoint, SecretsManagerEndpoint=interface("kms"))
        [problem] = problems(template(**other), calls=[PUT, read])
        self.assertIn("no path to secretsmanager", problem)

    def test_the_managed_grabs_secret_reads_need_the_endpoint_in_the_capacity_providers_subnets(self):
        provider = {"Type": "AWS::Lambda::CapacityProvider", "Properties": {"VpcConfig": {"SubnetIds": [{"Ref": "SubnetA"}], "SecurityGroupIds": [REF]}}}
        managed = {
            "Type": "AWS::Lambda::Function",
            "Metadata": {"BuildProperties": {"Binary": "grab"}},
            "Properties": {"CapacityProviderConfig": {"LambdaManagedInstancesCapacityProviderConfig": {"CapacityProviderArn": {"Fn::Sub": "arn:aws:lambda:us-east-1:1:capacity-provider:${Provider}"}}}},
        }
        read = {"function": "grab", "service": "secretsmanager", "operation": "GetSecretValue", "resources": [], "test": "who_may_grab::rotation"}
        base = dict(S3Endpoint=gateway(), LogsEndpoint=interface("logs"), EndpointSecurityGroup=endpoint_group(), Provider=provider, GrabManagedFunction=managed)
        [problem] = problems(template(**base), calls=[PUT, read])
        self.assertIn("Provider (grab): no path to secretsmanager, needed by GetSecretValue in who_may_grab::rotation", problem)
        self.assertEqual(problems(template(**base, SecretsManagerEndpoint=interface("secretsmanager")), calls=[PUT, read]), [])
        # In another subnet than the provider's: no path.
        elsewhere = interface("secretsmanager")
        elsewhere["Properties"]["SubnetIds"] = [{"Ref": "SubnetB"}]
        source = template(**base, SecretsManagerEndpoint=elsewhere, SubnetB={"Type": "AWS::EC2::Subnet", "Properties": {"VpcId": {"Ref": "Vpc"}, "CidrBlock": "10.0.2.0/24"}})
        [problem] = problems(source, calls=[PUT, read])
        self.assertIn("interface endpoint SecretsManagerEndpoint not in SubnetA", problem)

    def test_calls_of_a_binary_no_function_runs_are_named(self):
        self.assertEqual(unknown_functions(template(), [PUT, dict(PUT, function="ops")]), ["ops"])


if __name__ == "__main__":
    unittest.main()
