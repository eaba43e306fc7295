"""Two stages side by side in one account and Region (issue 51): template.yaml's Stage parameter
"prefixes resource names", so a stack with Stage=staging can be created beside one with
Stage=prod. This holds that for every physical name AWS wants unique: the template is translated
by SAM (scripts/transform.py's transform) for every parameter set of PARAMETER_SETS, once with
Stage=prod and once with Stage=staging, and no name of a resource of UNIQUE_NAMES may come out
the same in both.

A name is resolved with scripts/cfn.py's evaluator (its conditions decide which resources exist):
a literal, a parameter's value, ${AWS::Region} and ${AWS::AccountId} (the same account and Region
for both), both branches of an Fn::If, Fn::Join and Fn::Sub. A resource that sets no name is named
by CloudFormation (<stack name>-<logical id>-<random>), unique; a reference to a resource
(`${OperatorFunction}`, `!Ref CacheSubnetGroup`) is that resource's name: its own name property
resolved if the table lists one and it is set, else CloudFormation's, which carries the stack's
name. Names are compared case-folded (IAM's are case-insensitive; elsewhere it only reports more).

Needs samtranslator (.local/venv), as scripts/transform.py does.
"""

import collections
import copy
import itertools
import logging
import os
import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import cfn  # noqa: E402

try:  # needs samtranslator: only in .local/venv
    import transform
    from samtranslator.yaml_helper import yaml_parse
except ImportError:
    transform = None

TEMPLATE = pathlib.Path(__file__).resolve().parents[2] / "template.yaml"
STAGES = ("prod", "staging")

Name = collections.namedtuple("Name", "property parents scope namespace", defaults=((), "", None))

# Resource type -> the property that names it, the properties naming what it is unique within
# (with the value AWS assumes when absent; None: required), and where the name must be unique.
# Each row's source is the AWS page that says so (API reference or CloudFormation resource).
UNIQUE_NAMES = {
    # https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html (ConflictException;
    # ARN scheduler:<region>:<account>:schedule/<group>/<name>); the default group when no GroupName.
    # SAM names a ScheduleV2 event's schedule after its logical id unless Name or OmitName is set
    # (samtranslator/model/eventsources/scheduler.py; aws/serverless-application-model#3109).
    "AWS::Scheduler::Schedule": Name("Name", (("GroupName", "default"),), "its schedule group, account + Region"),
    # https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateScheduleGroup.html
    "AWS::Scheduler::ScheduleGroup": Name("Name", (), "account + Region"),
    # https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html
    # ("Log group names must be unique within a Region for an AWS account").
    "AWS::Logs::LogGroup": Name("LogGroupName", (), "account + Region"),
    # https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutMetricFilter.html
    # (a filter of the same name in the log group is replaced).
    "AWS::Logs::MetricFilter": Name("FilterName", (("LogGroupName", None),), "its log group"),
    # https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_PutSubscriptionFilter.html
    "AWS::Logs::SubscriptionFilter": Name("FilterName", (("LogGroupName", None),), "its log group"),
    # https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html ("This
    # name must be unique within the Region"; a put with an existing name overwrites that alarm);
    # composite alarms share the names (API_PutCompositeAlarm.html).
    "AWS::CloudWatch::Alarm": Name("AlarmName", (), "account + Region", "alarm"),
    "AWS::CloudWatch::CompositeAlarm": Name("AlarmName", (), "account + Region", "alarm"),
    # https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutDashboard.html ("All
    # dashboards in your account are global, not region-specific"; an existing name is replaced).
    "AWS::CloudWatch::Dashboard": Name("DashboardName", (), "account (every Region)"),
    # https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateServerlessCache.html
    "AWS::ElastiCache::ServerlessCache": Name("ServerlessCacheName", (), "account + Region"),
    # https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateReplicationGroup.html
    # (ReplicationGroupAlreadyExists).
    "AWS::ElastiCache::ReplicationGroup": Name("ReplicationGroupId", (), "account + Region"),
    # https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateCacheSubnetGroup.html
    # (CacheSubnetGroupAlreadyExists).
    "AWS::ElastiCache::SubnetGroup": Name("CacheSubnetGroupName", (), "account + Region"),
    # https://docs.aws.amazon.com/AmazonElastiCache/latest/APIReference/API_CreateUser.html,
    # API_CreateUserGroup.html (UserAlreadyExists, UserGroupAlreadyExists).
    "AWS::ElastiCache::User": Name("UserId", (), "account + Region"),
    "AWS::ElastiCache::UserGroup": Name("UserGroupId", (), "account + Region"),
    # https://docs.aws.amazon.com/cognito/latest/developerguide/cognito-user-pools-assign-domain-prefix.html
    # (a prefix domain is unique in the Region across all accounts; a custom domain everywhere).
    "AWS::Cognito::UserPoolDomain": Name("Domain", (), "Region, every account"),
    # https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/API_CreateResourceServer.html,
    # API_CreateGroup.html: within their user pool.
    "AWS::Cognito::UserPoolResourceServer": Name("Identifier", (("UserPoolId", None),), "its user pool"),
    "AWS::Cognito::UserPoolGroup": Name("GroupName", (("UserPoolId", None),), "its user pool"),
    # https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_CreateEventBus.html,
    # API_CreateConnection.html, API_CreateApiDestination.html, API_CreateArchive.html
    # (ResourceAlreadyExistsException); a rule within its bus, the default bus when none is named
    # (API_PutRule.html: a put with an existing name updates that rule).
    "AWS::Events::EventBus": Name("Name", (), "account + Region"),
    "AWS::Events::Connection": Name("Name", (), "account + Region"),
    "AWS::Events::ApiDestination": Name("Name", (), "account + Region"),
    "AWS::Events::Archive": Name("ArchiveName", (), "account + Region"),
    "AWS::Events::Rule": Name("Name", (("EventBusName", "default"),), "its event bus"),
    # https://docs.aws.amazon.com/eventbridge/latest/pipes-reference/API_CreatePipe.html (ConflictException).
    "AWS::Pipes::Pipe": Name("Name", (), "account + Region"),
    # https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html
    # ("A queue name ... must be unique within the scope of your queues" - account + Region).
    "AWS::SQS::Queue": Name("QueueName", (), "account + Region"),
    # https://docs.aws.amazon.com/sns/latest/api/API_CreateTopic.html (same name: the existing topic).
    "AWS::SNS::Topic": Name("TopicName", (), "account + Region"),
    # https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_CreateSecret.html
    # (ResourceExistsException).
    "AWS::SecretsManager::Secret": Name("Name", (), "account + Region"),
    # https://docs.aws.amazon.com/systems-manager/latest/APIReference/API_PutParameter.html
    "AWS::SSM::Parameter": Name("Name", (), "account + Region"),
    # https://docs.aws.amazon.com/kms/latest/APIReference/API_CreateAlias.html ("unique in the account and Region").
    "AWS::KMS::Alias": Name("AliasName", (), "account + Region"),
    # https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html (unique across
    # all accounts of the partition).
    "AWS::S3::Bucket": Name("BucketName", (), "partition, every account"),
    # https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_CreateTable.html
    # ("unique among those associated with the AWS Account and Region").
    "AWS::DynamoDB::Table": Name("TableName", (), "account + Region"),
    # https://docs.aws.amazon.com/lambda/latest/api/API_CreateFunction.html (ResourceConflictException);
    # an alias within its function (API_CreateAlias.html).
    "AWS::Lambda::Function": Name("FunctionName", (), "account + Region"),
    "AWS::Lambda::Alias": Name("Name", (("FunctionName", None),), "its function"),
    # https://docs.aws.amazon.com/lambda/latest/api/API_CreateCapacityProvider.html; its Ref is its
    # name (AWS::Lambda::CapacityProvider's primary identifier, CapacityProviderName).
    "AWS::Lambda::CapacityProvider": Name("CapacityProviderName", (), "account + Region"),
    # https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html#reference_iam-quotas-names
    # ("Names of users, groups, roles, policies ... must be unique within the account", not
    # distinguished by case; IAM is global, so every Region).
    "AWS::IAM::Role": Name("RoleName", (), "account (every Region)"),
    "AWS::IAM::ManagedPolicy": Name("ManagedPolicyName", (), "account (every Region)"),
    "AWS::IAM::InstanceProfile": Name("InstanceProfileName", (), "account (every Region)"),
    "AWS::IAM::User": Name("UserName", (), "account (every Region)"),
    "AWS::IAM::Group": Name("GroupName", (), "account (every Region)"),
    # https://docs.aws.amazon.com/codedeploy/latest/APIReference/API_CreateApplication.html
    # (ApplicationAlreadyExistsException), API_CreateDeploymentGroup.html (within its application),
    # API_CreateDeploymentConfig.html.
    "AWS::CodeDeploy::Application": Name("ApplicationName", (), "account + Region"),
    "AWS::CodeDeploy::DeploymentGroup": Name("DeploymentGroupName", (("ApplicationName", None),), "its application"),
    "AWS::CodeDeploy::DeploymentConfig": Name("DeploymentConfigName", (), "account + Region"),
    # https://docs.aws.amazon.com/apigatewayv2/latest/api-reference/apis-apiid-stages.html: a stage
    # within its API; https://docs.aws.amazon.com/apigateway/latest/api/API_CreateDomainName.html.
    "AWS::ApiGatewayV2::Stage": Name("StageName", (("ApiId", None),), "its API"),
    "AWS::ApiGatewayV2::DomainName": Name("DomainName", (), "account + Region"),
    # CloudFront is global: https://docs.aws.amazon.com/cloudfront/latest/APIReference/API_CreateOriginAccessControl.html
    # (OriginAccessControlAlreadyExists), API_CreateResponseHeadersPolicy.html
    # (ResponseHeadersPolicyAlreadyExists), API_CreateFunction.html (FunctionAlreadyExists),
    # API_CreateCachePolicy.html (CachePolicyAlreadyExists), API_CreateOriginRequestPolicy.html
    # (OriginRequestPolicyAlreadyExists): one name per account, every Region's stacks alike. A
    # dotted property is nested.
    "AWS::CloudFront::OriginAccessControl": Name("OriginAccessControlConfig.Name", (), "account (every Region)"),
    "AWS::CloudFront::ResponseHeadersPolicy": Name("ResponseHeadersPolicyConfig.Name", (), "account (every Region)"),
    "AWS::CloudFront::CachePolicy": Name("CachePolicyConfig.Name", (), "account (every Region)"),
    "AWS::CloudFront::OriginRequestPolicy": Name("OriginRequestPolicyConfig.Name", (), "account (every Region)"),
    "AWS::CloudFront::Function": Name("Name", (), "account (every Region)"),
    # https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSecurityGroup.html ("must be
    # unique within the VPC"); the default VPC when none is given.
    "AWS::EC2::SecurityGroup": Name("GroupName", (("VpcId", "default-vpc"),), "its VPC"),
}

# The types whose physical name AWS always makes up, or whose name need not be unique: looked at,
# nothing to check. A type in neither table fails the test, so a new kind of resource is looked at.
NAMED_BY_AWS = {
    "AWS::ApiGatewayV2::Api": "Name is not unique (ApiId is generated)",
    "AWS::ApiGatewayV2::Route": "id generated", "AWS::ApiGatewayV2::Integration": "id generated",
    "AWS::ApiGatewayV2::Authorizer": "id generated", "AWS::ApiGatewayV2::ApiMapping": "id generated",
    "AWS::CloudWatch::AnomalyDetector": "no name",
    "AWS::CloudFront::Distribution": "id generated",
    # https://docs.aws.amazon.com/cognito-user-identity-pools/latest/APIReference/API_CreateUserPool.html,
    # API_CreateUserPoolClient.html: PoolName and ClientName are labels; ids are generated.
    "AWS::Cognito::UserPool": "UserPoolName is not unique (UserPoolId is generated)",
    "AWS::Cognito::UserPoolClient": "ClientName is not unique (ClientId is generated)",
    "AWS::Cognito::ManagedLoginBranding": "id generated",
    "AWS::EC2::VPC": "id generated", "AWS::EC2::Subnet": "id generated", "AWS::EC2::RouteTable": "id generated",
    "AWS::EC2::SubnetRouteTableAssociation": "id generated", "AWS::EC2::VPCEndpoint": "id generated",
    "AWS::EC2::Route": "within its route table", "AWS::EC2::NatGateway": "id generated", "AWS::EC2::EIP": "allocated",
    "AWS::EC2::InternetGateway": "id generated", "AWS::EC2::VPCGatewayAttachment": "no name",
    "AWS::EC2::SecurityGroupIngress": "no name", "AWS::EC2::SecurityGroupEgress": "no name",
    # CacheParameterGroupName is read-only in CloudFormation: always generated.
    "AWS::ElastiCache::ParameterGroup": "CacheParameterGroupName generated",
    "AWS::IAM::Policy": "PolicyName is within its roles (inline)",
    "AWS::KMS::Key": "id generated",
    "AWS::Lambda::EventInvokeConfig": "no name", "AWS::Lambda::Permission": "statement id generated",
    "AWS::Lambda::Url": "no name", "AWS::Lambda::Version": "numbered", "AWS::Lambda::EventSourceMapping": "id generated",
    "AWS::Lambda::LayerVersion": "numbered within its layer",
    "AWS::S3::BucketPolicy": "no name", "AWS::SNS::Subscription": "no name", "AWS::SNS::TopicPolicy": "no name",
    "AWS::SQS::QueuePolicy": "no name", "AWS::Events::EventBusPolicy": "within its bus",
    "AWS::Logs::ResourcePolicy": "PolicyName, account + Region: not used",
}


def variants(node):
    """Every value `node` can take with each Fn::If replaced by one of its branches."""
    if isinstance(node, list):
        return [list(combo) for combo in itertools.product(*(variants(item) for item in node))]
    if isinstance(node, dict):
        if list(node) == ["Fn::If"]:
            _, yes, no = node["Fn::If"]
            return variants(yes) + variants(no)
        keys = list(node)
        return [dict(zip(keys, combo)) for combo in itertools.product(*(variants(node[key]) for key in keys))]
    return [node]


class StageStack(cfn.Stack):
    """The translated template deployed as stack `stack_name`: a resource's name is the one its
    template sets, else CloudFormation's (which carries the stack's name)."""

    def __init__(self, template, overrides, stack_name):
        super().__init__(template, overrides)
        self.stack_name = stack_name

    def ref(self, name):
        if name == "AWS::StackName":
            return self.stack_name
        if name == "AWS::StackId":
            return f"arn:aws:cloudformation:{cfn.REGION}:{cfn.ACCOUNT}:stack/{self.stack_name}/id"
        return super().ref(name)

    def physical_name(self, logical_id):
        resource = self.resources[logical_id]
        name = UNIQUE_NAMES.get(resource["Type"])
        given = resource.get("Properties", {}).get(name.property) if name else None
        if given is not None:
            value = self.resolve(given)
            if value is not cfn.NO_VALUE:
                return value
        return f"{self.stack_name}-{logical_id}-GENERATED"

    def get_att(self, logical_id, attribute):
        value = super().get_att(logical_id, attribute)
        # cfn.Stack's stand-in for an attribute it does not model is the same in every stack.
        return f"{self.physical_name(logical_id)}.{attribute}" if value == f"{logical_id}.{attribute}" else value


def physical_names(stack):
    """{(namespace, scope and name, case-folded): (type, logical id, name as shown)} of every
    resource of `stack` whose name must be unique; raises on a type neither table knows."""
    names = {}
    for logical_id in stack.created():
        resource = stack.resources[logical_id]
        kind = resource["Type"]
        if kind in NAMED_BY_AWS:
            continue
        if kind not in UNIQUE_NAMES:
            raise AssertionError(f"{logical_id}: {kind} is in neither UNIQUE_NAMES nor NAMED_BY_AWS; add it to one")
        spec = UNIQUE_NAMES[kind]
        properties = resource.get("Properties", {})
        *outer, leaf = spec.property.split(".")
        named = properties
        for part in outer:
            named = named.get(part, {})
        if named.get(leaf) is None:
            continue  # named by CloudFormation
        for variant in variants(named[leaf]):
            name = stack.resolve(variant)
            if name is cfn.NO_VALUE:
                continue
            parents = []
            for parent, default in spec.parents:
                value = stack.resolve(properties[parent]) if parent in properties else cfn.NO_VALUE
                parents.append(str(default if value is cfn.NO_VALUE else value))
            shown = "/".join(parents + [str(name)])
            names[(spec.namespace or kind, shown.casefold())] = (kind, logical_id, shown)
    return names


def shared_names(stacks):
    """(type, logical id, name) of every name the stacks (one per stage) have in common."""
    first, *others = (physical_names(stack) for stack in stacks)
    return sorted({first[key] for key in first if all(key in other for other in others)})


def translated(template, parameters, stage):
    return transform.transform(transform.packaged(template), {**parameters, "Stage": stage}, transform.NoManagedPolicies())


def stage_stacks(template, parameters):
    return [StageStack(translated(template, parameters, stage), {**parameters, "Stage": stage}, f"red-packets-{stage}") for stage in STAGES]


def report(clashes):
    """One line a name: the type, the logical id, the name, and the parameter sets it is shared in."""
    lines = []
    for (kind, logical_id, name), sets in clashes.items():
        where = "every parameter set" if len(sets) == len(transform.PARAMETER_SETS) else ", ".join(sets)
        lines.append(f"{kind} {logical_id}: {name!r} ({where})")
    return "\n".join(lines)


class NamesOfAHandWrittenTemplate(unittest.TestCase):
    """The check on a CloudFormation template of its own (no SAM transform)."""

    TEMPLATE = {
        "Parameters": {"Stage": {"Type": "String", "Default": "prod"}, "Mode": {"Type": "String", "Default": "a"}},
        "Conditions": {"ModeA": {"Fn::Equals": [{"Ref": "Mode"}, "a"]}, "ModeB": {"Fn::Equals": [{"Ref": "Mode"}, "b"]}},
        "Resources": {
            "Fn": {"Type": "AWS::Lambda::Function"},
            "FnLogs": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": {"Fn::Sub": "/aws/lambda/${Fn}"}}},
            "Either": {"Type": "AWS::Logs::LogGroup", "Properties": {"LogGroupName": {"Fn::If": ["ModeA", {"Fn::Sub": "/x/${Stage}"}, "/x/fixed"]}}},
            "Staged": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": {"Fn::Join": ["-", ["q", {"Ref": "Stage"}, {"Ref": "AWS::Region"}]]}}},
            "Unnamed": {"Type": "AWS::SQS::Queue"},
            "Pool": {"Type": "AWS::Cognito::UserPool", "Properties": {"UserPoolName": "pool"}},
            "Group": {"Type": "AWS::Scheduler::ScheduleGroup", "Properties": {"Name": {"Fn::Sub": "g-${Stage}"}}},
            "InGroup": {"Type": "AWS::Scheduler::Schedule", "Properties": {"Name": "tick", "GroupName": {"Ref": "Group"}}},
            "InDefault": {"Type": "AWS::Scheduler::Schedule", "Properties": {"Name": "tock"}},
            "OnlyInB": {"Type": "AWS::Scheduler::Schedule", "Condition": "ModeB", "Properties": {"Name": "only-b"}},
        },
    }

    def stacks(self, overrides=None):
        return [StageStack(self.TEMPLATE, {**(overrides or {}), "Stage": stage}, f"s-{stage}") for stage in STAGES]

    def test_a_fixed_name_a_fixed_fn_if_branch_and_a_fixed_name_in_the_default_group_are_shared(self):
        self.assertEqual(shared_names(self.stacks()), [
            ("AWS::Logs::LogGroup", "Either", "/x/fixed"),
            ("AWS::Scheduler::Schedule", "InDefault", "default/tock"),
        ])

    def test_a_resource_its_condition_leaves_out_is_not_created(self):
        self.assertIn(("AWS::Scheduler::Schedule", "OnlyInB", "default/only-b"), shared_names(self.stacks({"Mode": "b"})))

    def test_a_type_neither_table_knows_fails(self):
        template = copy.deepcopy(self.TEMPLATE)
        template["Resources"]["New"] = {"Type": "AWS::Example::Thing"}
        with self.assertRaisesRegex(AssertionError, "AWS::Example::Thing"):
            shared_names([StageStack(template, {"Stage": stage}, f"s-{stage}") for stage in STAGES])


@unittest.skipIf(transform is None, "needs samtranslator (.local/venv/bin/python)")
class TwoStagesOfTemplateYaml(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.environ.setdefault("AWS_DEFAULT_REGION", cfn.REGION)
        logging.getLogger("samtranslator").setLevel(logging.ERROR)  # its metrics' noise
        cls.template = yaml_parse(TEMPLATE.read_text())

    def test_no_physical_name_is_shared_by_prod_and_staging_in_any_parameter_set(self):
        clashes = collections.defaultdict(list)
        for name, parameters in transform.PARAMETER_SETS.items():
            for clash in shared_names(stage_stacks(self.template, parameters)):
                clashes[clash].append(name)
        if clashes:
            self.fail("names Stage=prod and Stage=staging share in one account and Region:\n" + report(clashes))

    def test_the_capacity_providers_log_group_is_the_one_lambda_writes_to(self):
        # Lambda writes a capacity provider's logs to /aws/lambda/capacity-provider/<its name>
        # (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-cwl-configure.html):
        # the template creates that group, with a retention, whenever it creates the provider.
        parameters = transform.PARAMETER_SETS["managed-grab"]
        stack = StageStack(translated(self.template, parameters, "prod"), {**parameters, "Stage": "prod"}, "red-packets-prod")
        groups = {stack.properties(group)["LogGroupName"]: group for group in stack.created("AWS::Logs::LogGroup")}
        providers = stack.created("AWS::Lambda::CapacityProvider")
        self.assertEqual(len(providers), 1)
        for provider in providers:
            name = f"/aws/lambda/capacity-provider/{stack.resolve({'Ref': provider})}"
            self.assertIn(name, groups, f"no log group {name} for {provider}")
            group = stack.resources[groups[name]]
            self.assertEqual(group.get("Condition"), stack.resources[provider].get("Condition"))
            self.assertEqual(group["Properties"].get("RetentionInDays"), {"Ref": "LogRetentionDays"})

    def test_the_check_reports_a_schedule_whose_name_lost_its_stage(self):
        template = copy.deepcopy(self.template)
        template["Resources"]["SettleFunction"]["Properties"]["Events"]["ShardsLow"]["Properties"]["Name"] = "settle-shards-low"
        self.assertEqual(shared_names(stage_stacks(template, {})), [("AWS::Scheduler::Schedule", "SettleFunctionShardsLow", "default/settle-shards-low")])


if __name__ == "__main__":
    unittest.main()
