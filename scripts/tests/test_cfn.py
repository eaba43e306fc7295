"""scripts/cfn.py, the one template evaluator of permissions.py and network_paths.py: parameters,
conditions, intrinsic functions, and the way back from a resolved Ref to its resource."""

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import cfn  # noqa: E402
import template_parts  # noqa: E402
from cfn import Stack  # noqa: E402

try:  # needs samtranslator: only in .local/venv
    import transform
except ImportError:
    transform = None

CONDITIONS = ["On", "Off", "Unreserved", "NoTypes", "OnAndUnreserved", "OffOrNoTypes", "Strict"]

TEMPLATE = {
    "Parameters": {
        **template_parts.PARAMETERS,
        "Protect": {"Type": "String", "Default": "true"},
        "Stage": {"Type": "String", "Default": "prod"},
    },
    "Conditions": {
        **template_parts.CONDITIONS,
        "Strict": {"Fn::Equals": [{"Ref": "Protect"}, True]},
    },
    "Resources": {
        "Table": {"Type": "AWS::DynamoDB::Table"},
        "Reports": {"Type": "AWS::S3::Bucket"},
        "Alarms": {"Type": "AWS::SNS::Topic"},
        "Subnet": {"Type": "AWS::EC2::Subnet", "Properties": {"CidrBlock": "10.0.1.0/24"}},
        "Group": {"Type": "AWS::EC2::SecurityGroup", "Condition": "On", "Properties": {"GroupDescription": "g"}},
        "OffGroup": {"Type": "AWS::EC2::SecurityGroup", "Condition": "Off", "Properties": {"GroupDescription": "o"}},
        "Function": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "VpcConfig": {
                    "SubnetIds": [{"Ref": "Subnet"}, {"Fn::If": ["Off", {"Ref": "Subnet"}, {"Ref": "AWS::NoValue"}]}],
                    "SecurityGroupIds": {"Fn::If": ["On", [{"Fn::GetAtt": ["Group", "GroupId"]}], {"Ref": "AWS::NoValue"}]},
                },
                "ReservedConcurrentExecutions": {"Fn::If": ["Unreserved", {"Ref": "AWS::NoValue"}, {"Ref": "Reserved"}]},
                "Environment": {"Variables": {"TABLE": {"Ref": "Table"}, "STAGE": {"Fn::Sub": "red-packets-${Stage}"}}},
            },
        },
    },
}


class Parameters(unittest.TestCase):
    def test_defaults_and_overrides_are_strings_and_a_list_is_a_list(self):
        stack = Stack(TEMPLATE)
        self.assertEqual(stack.parameters["Reserved"], "0")
        self.assertEqual(stack.parameters["Types"], [""])
        stack = Stack(TEMPLATE, {"Reserved": 2, "Types": "c7g.xlarge,m7g.xlarge"})
        self.assertEqual(stack.parameters["Reserved"], "2")
        self.assertEqual(stack.parameters["Types"], ["c7g.xlarge", "m7g.xlarge"])
        self.assertEqual(stack.resolve({"Fn::Select": [1, {"Ref": "Types"}]}), "m7g.xlarge")

    def test_parameter_sets_are_read_from_transform_py(self):
        sets = cfn.parameter_sets()
        self.assertEqual(sets["defaults"], {})
        self.assertIn("managed-grab", sets)
        if transform is not None:
            self.assertEqual(sets, transform.PARAMETER_SETS)


class Conditions(unittest.TestCase):
    def test_not_and_or_equals_on_refs_with_defaults(self):
        stack = Stack(TEMPLATE)
        self.assertEqual([stack.condition(c) for c in CONDITIONS], [True, False, True, True, True, True, True])

    def test_not_and_or_equals_on_refs_with_overrides(self):
        stack = Stack(TEMPLATE, {"Mode": "off", "Reserved": "2", "Types": "c7g.xlarge,m7g.xlarge", "Protect": "false"})
        self.assertEqual([stack.condition(c) for c in CONDITIONS], [False, True, False, False, False, True, False])
        stack = Stack(TEMPLATE, {"Reserved": "2"})
        self.assertEqual([stack.condition(c) for c in ["On", "Unreserved", "OnAndUnreserved", "OffOrNoTypes"]], [True, False, False, True])
        stack = Stack(TEMPLATE, {"Types": "c7g.xlarge"})
        self.assertEqual([stack.condition(c) for c in ["NoTypes", "OffOrNoTypes"]], [False, False])

    def test_a_resource_exists_when_its_condition_holds(self):
        self.assertEqual(Stack(TEMPLATE).created("AWS::EC2::SecurityGroup"), ["Group"])
        self.assertEqual(Stack(TEMPLATE, {"Mode": "off"}).created("AWS::EC2::SecurityGroup"), ["OffGroup"])
        self.assertEqual(Stack(TEMPLATE).created(), ["Table", "Reports", "Alarms", "Subnet", "Group", "Function"])
        self.assertFalse(Stack(TEMPLATE).exists("OffGroup"))


class Resolution(unittest.TestCase):
    def test_fn_if_with_no_value_drops_the_item_or_the_property(self):
        properties = Stack(TEMPLATE).properties("Function")
        self.assertEqual(properties["VpcConfig"], {"SubnetIds": ["Subnet"], "SecurityGroupIds": ["Group"]})
        self.assertNotIn("ReservedConcurrentExecutions", properties)
        properties = Stack(TEMPLATE, {"Mode": "off", "Reserved": "3"}).properties("Function")
        self.assertEqual(properties["VpcConfig"], {"SubnetIds": ["Subnet", "Subnet"]})
        self.assertEqual(properties["ReservedConcurrentExecutions"], "3")

    def test_fn_sub_with_attributes_pseudo_parameters_and_variables(self):
        stack = Stack(TEMPLATE)
        self.assertEqual(stack.resolve({"Fn::Sub": "${Table.Arn}/index/history"}), "arn:aws:dynamodb:us-east-1:123456789012:table/Table/index/history")
        self.assertEqual(
            stack.resolve({"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${Function}"}),
            "arn:aws:lambda:us-east-1:123456789012:function:Function",
        )
        self.assertEqual(stack.resolve({"Fn::Sub": "${AWS::StackName}.${AWS::URLSuffix}"}), "red-packets.amazonaws.com")
        self.assertEqual(stack.resolve({"Fn::Sub": ["${Bucket}/${!Literal}", {"Bucket": {"Ref": "Reports"}}]}), "reports/${Literal}")
        self.assertEqual(stack.properties("Function")["Environment"]["Variables"], {"TABLE": "Table", "STAGE": "red-packets-prod"})

    def test_ref_and_get_att_give_physical_names_and_arns(self):
        stack = Stack(TEMPLATE)
        self.assertEqual(stack.resolve({"Ref": "Reports"}), "reports")
        self.assertEqual(stack.resolve({"Fn::GetAtt": "Reports.Arn"}), "arn:aws:s3:::reports")
        self.assertEqual(stack.resolve({"Ref": "Alarms"}), "arn:aws:sns:us-east-1:123456789012:Alarms")
        self.assertEqual(stack.resolve({"Fn::GetAtt": ["Group", "GroupId"]}), stack.resolve({"Ref": "Group"}))
        self.assertEqual(stack.resolve({"Fn::GetAtt": ["Subnet", "SubnetId"]}), "Subnet")

    def test_logical_id_goes_back_from_a_resolved_ref(self):
        stack = Stack(TEMPLATE)
        for name in TEMPLATE["Resources"]:
            self.assertEqual(stack.logical_id(stack.resolve({"Ref": name})), name)
        self.assertIsNone(stack.logical_id("Nothing"))
        self.assertIsNone(stack.logical_id(["Subnet"]))

    def test_equals_compares_as_strings(self):
        stack = Stack(TEMPLATE)
        self.assertTrue(stack.resolve({"Fn::Equals": [{"Ref": "Reserved"}, 0]}))
        self.assertTrue(stack.resolve({"Fn::Equals": [True, "true"]}))
        self.assertFalse(stack.resolve({"Fn::Equals": [{"Ref": "Mode"}, "On"]}))

    def test_what_it_does_not_know_raises(self):
        stack = Stack(TEMPLATE)
        with self.assertRaisesRegex(ValueError, "Ref to unknown Nothing"):
            stack.resolve({"Ref": "Nothing"})
        with self.assertRaisesRegex(ValueError, "unsupported intrinsic Fn::Base64"):
            stack.resolve({"Fn::Base64": "x"})
        with self.assertRaisesRegex(ValueError, "no ARN format"):
            stack.resolve({"Fn::GetAtt": ["Subnet", "Arn"]})


class References(unittest.TestCase):
    def test_the_names_a_value_refers_to(self):
        value = {"A": [{"Ref": "Subnet"}, {"Fn::GetAtt": "Table.Arn"}], "B": {"Fn::Sub": ["${Provider}:${Group.GroupId}:${!Literal}:${X}", {"X": {"Ref": "Stage"}}]}}
        self.assertEqual(cfn.references(value), {"Subnet", "Table", "Provider", "Group", "X", "Stage"})


if __name__ == "__main__":
    unittest.main()
