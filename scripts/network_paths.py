"""Every AWS service a function in the VPC calls has a network path to it, in every parameter set.

The emulators are reached over localhost; in AWS a function attached to the VPC reaches only what
its subnets route to. So, for the SAM-transformed template of each parameter set (written by
scripts/transform.py to .local/transformed/<set>.json) and the AWS calls the functions made while
the tests ran (JSON lines, one call a line, as local/src/calls.rs writes them):

- each Lambda function with a VpcConfig needs a path to every service its recorded calls reach,
  and to X-Ray when its TracingConfig is Active (its X-Ray daemon sends the segments);
- each Lambda Managed Instances capacity provider needs a path to every service the calls of its
  functions reach, to CloudWatch Logs always and to X-Ray when one of them is traced: the
  functions' logs (and the embedded-format metrics CloudWatch Logs extracts from them) and traces
  leave from the instances in its subnets. "When running Lambda Managed Instances functions, you
  need to configure network connectivity [...] This includes AWS services such as Amazon S3 and
  DynamoDB. The connectivity is also needed for transmitting telemetry data to CloudWatch Logs
  and X-Ray." https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-networking.html
  (A standard function's logs go out through Lambda itself, not through its VPC.)

A path is one of: a gateway endpoint for the service on the route table of each of the subnets;
an interface endpoint for it in each of the subnets, with private DNS, whose security group admits
443 from the function's; a 0.0.0.0/0 route to a NAT gateway in each subnet's route table. The
function's security groups must let 443 out to it. (Secrets Manager, which send and grab read
their keys from at run time, is reached through an interface endpoint: the SDK calls its regional
hostname, secretsmanager.<region>.amazonaws.com, which private DNS alone resolves to the
endpoint.) Resources whose Condition is false in the set are left out (scripts/cfn.py evaluates
the template for the set). Prints one line per missing path and exits 1 if there is any.

    python3 scripts/network_paths.py CALLS_DIR [--transformed .local/transformed]
"""

import argparse
import ipaddress
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from cfn import REGION, Stack, parameter_sets, references  # noqa: E402

# A recorded call's service (the SDK's service name, lower-cased) -> its endpoint's service name.
ENDPOINT_NAMES = {"cloudwatch": "monitoring", "cloudwatchlogs": "logs", "eventbridge": "events", "sfn": "states"}


def load_calls(directory):
    """Every recorded call in the *.jsonl files of `directory`."""
    calls = []
    for path in sorted(pathlib.Path(directory).glob("*.jsonl")):
        calls += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return calls


def of_type(stack, kind):
    """The (logical id, resolved properties) of the resources of type `kind` the set creates."""
    return [(name, stack.properties(name)) for name in stack.created(kind)]


def properties_of(stack, ref):
    """The resolved properties of the resource `ref` (a resolved Ref: a subnet's or security
    group's id) names, or {} if the set does not create it."""
    name = stack.logical_id(ref)
    return stack.properties(name) if name is not None and stack.exists(name) else {}


class Subject:
    """What runs code in the VPC: a function, or a capacity provider with its functions."""

    def __init__(self, name, functions, subnets, groups):
        self.name, self.functions, self.subnets, self.groups = name, functions, subnets, groups
        self.needs = {}  # endpoint service name -> why: recorded calls, or a sentence

    def need(self, service, why):
        self.needs.setdefault(ENDPOINT_NAMES.get(service, service), []).append(why)

    def label(self):
        return f"{self.name} ({', '.join(self.functions.values())})"


def subjects(stack, calls):
    """Each VPC-attached function and each capacity provider, with the services it needs."""
    functions = dict(of_type(stack, "AWS::Lambda::Function"))
    binary = {name: stack.resources[name].get("Metadata", {}).get("BuildProperties", {}).get("Binary", name) for name in functions}
    traced = {name: p.get("TracingConfig", {}).get("Mode") == "Active" for name, p in functions.items()}
    found = []
    for name, properties in functions.items():
        vpc = properties.get("VpcConfig", {})
        if vpc.get("SubnetIds"):
            found.append(Subject(name, {name: binary[name]}, vpc["SubnetIds"], vpc.get("SecurityGroupIds", [])))
            if traced[name]:
                found[-1].need("xray", "the X-Ray daemon (TracingConfig Active)")
    for name, properties in of_type(stack, "AWS::Lambda::CapacityProvider"):
        vpc = properties.get("VpcConfig", {})
        mine = {f: binary[f] for f in functions if name in references(stack.resources[f]["Properties"].get("CapacityProviderConfig", {}))}
        subject = Subject(name, mine, vpc.get("SubnetIds", []), vpc.get("SecurityGroupIds", []))
        subject.need("logs", "Lambda Managed Instances: its functions' logs and metrics")
        if any(traced[f] for f in mine):
            subject.need("xray", "Lambda Managed Instances: its functions' traces (TracingConfig Active)")
        found.append(subject)
    for subject in found:
        for call in calls:
            if call["function"] in subject.functions.values():
                subject.need(call["service"], call)
    return found


def endpoint_service(properties):
    """The service an endpoint's ServiceName names (com.amazonaws.<region>.s3 -> s3)."""
    name = str(properties.get("ServiceName", ""))
    prefix = f"com.amazonaws.{REGION}."
    return name[len(prefix):] if name.startswith(prefix) else name.rsplit(".", 1)[-1]


def route_tables(stack, subnets):
    """subnet -> the route table associated with it (None: the VPC's main table, local routes only)."""
    tables = {p.get("SubnetId"): p.get("RouteTableId") for _, p in of_type(stack, "AWS::EC2::SubnetRouteTableAssociation")}
    return {subnet: tables.get(subnet) for subnet in subnets}


def rules(stack, group, direction):
    """The ingress or egress rules of a security group: its own and the standalone ones. None for
    an egress with no rules given (AWS's default: everything out)."""
    properties = properties_of(stack, group)
    key = "SecurityGroupIngress" if direction == "ingress" else "SecurityGroupEgress"
    standalone = [p for _, p in of_type(stack, f"AWS::EC2::{key}") if p.get("GroupId") == group]
    if direction == "egress" and key not in properties and not standalone:
        return None
    return properties.get(key, []) + standalone


def admits_443(rule):
    """The rule covers TCP 443."""
    protocol = str(rule.get("IpProtocol"))
    if protocol == "-1":
        return True
    return protocol in ("tcp", "6") and int(rule.get("FromPort", -1)) <= 443 <= int(rule.get("ToPort", -1))


def covers(cidr, network):
    """The CIDR `cidr` holds all of `network` (a CIDR, or None when it cannot be known)."""
    try:
        return ipaddress.ip_network(cidr).supernet_of(ipaddress.ip_network(network or "0.0.0.0/0"))
    except (TypeError, ValueError):
        return False


def subnet_cidr(stack, subnet):
    return properties_of(stack, subnet).get("CidrBlock")


def egress_to(stack, groups, cidrs=(), to_groups=(), prefix_list=False):
    """Some group of `groups` lets 443 out to all of `cidrs`, or to one of `to_groups`, or (with
    prefix_list) to a prefix list."""
    for group in groups:
        egress = rules(stack, group, "egress")
        if egress is None:
            return True
        for rule in filter(admits_443, egress):
            if rule.get("DestinationSecurityGroupId") in to_groups or (prefix_list and rule.get("DestinationPrefixListId")):
                return True
            if "CidrIp" in rule and cidrs and all(covers(rule["CidrIp"], cidr) for cidr in cidrs):
                return True
    return False


def gateway_path(stack, subject, service, tables):
    """(path, why not): a gateway endpoint for `service` on each of the subject's route tables."""
    why = []
    for name, p in of_type(stack, "AWS::EC2::VPCEndpoint"):
        if p.get("VpcEndpointType", "Gateway") != "Gateway" or endpoint_service(p) != service:
            continue
        missing = sorted({str(t) for t in tables.values() if t not in p.get("RouteTableIds", [])})
        if missing:
            why.append(f"gateway endpoint {name} not on {', '.join(missing)}")
        elif not egress_to(stack, subject.groups, cidrs=["0.0.0.0/0"], prefix_list=True):
            why.append(f"gateway endpoint {name}: the security groups do not let 443 out")
        else:
            return True, []
    return False, why or [f"no gateway endpoint for {service}"]


def interface_path(stack, subject, service):
    """(path, why not): an interface endpoint for `service` in the subject's subnets, with private
    DNS and a security group that admits 443 from the subject's."""
    why = []
    for name, p in of_type(stack, "AWS::EC2::VPCEndpoint"):
        if p.get("VpcEndpointType") != "Interface" or endpoint_service(p) != service:
            continue
        groups = p.get("SecurityGroupIds", [])
        ingress = [rule for group in groups for rule in rules(stack, group, "ingress") if admits_443(rule)]
        subnets = [subnet_cidr(stack, s) for s in subject.subnets]
        admitted = any(
            rule.get("SourceSecurityGroupId") in subject.groups
            or ("CidrIp" in rule and all(covers(rule["CidrIp"], cidr) for cidr in subnets))
            for rule in ingress
        )
        missing = [s for s in subject.subnets if s not in p.get("SubnetIds", [])]
        if p.get("PrivateDnsEnabled") is not True:
            why.append(f"interface endpoint {name} without private DNS")
        elif missing:
            why.append(f"interface endpoint {name} not in {', '.join(map(str, missing))}")
        elif not admitted:
            why.append(f"interface endpoint {name}: its security groups do not admit 443 from {', '.join(subject.groups)}")
        elif not egress_to(stack, subject.groups, cidrs=[subnet_cidr(stack, s) for s in p["SubnetIds"]], to_groups=groups):
            why.append(f"interface endpoint {name}: {', '.join(subject.groups)} do not let 443 out to it")
        else:
            return True, []
    return False, why or [f"no interface endpoint for {service}"]


def nat_path(stack, subject, tables):
    """(path, why not): a 0.0.0.0/0 route to a NAT gateway in each of the subject's route tables."""
    routes = {p.get("RouteTableId") for _, p in of_type(stack, "AWS::EC2::Route") if p.get("DestinationCidrBlock") == "0.0.0.0/0" and p.get("NatGatewayId")}
    if not all(table in routes for table in tables.values()):
        return False, ["no NAT route"]
    if not egress_to(stack, subject.groups, cidrs=["0.0.0.0/0"]):
        return False, ["NAT route, but the security groups do not let 443 out"]
    return True, []


def problems_of(set_name, stack, calls):
    """One line for each service a VPC subject needs and has no path to."""
    problems = []
    for subject in subjects(stack, calls):
        tables = route_tables(stack, subject.subnets)
        for service, reasons in sorted(subject.needs.items()):
            why = []
            for ok, because in (gateway_path(stack, subject, service, tables), interface_path(stack, subject, service), nat_path(stack, subject, tables)):
                if ok:
                    break
                why += because
            else:
                problems.append(f"network [{set_name}] {subject.label()}: no path to {service}, needed by {describe(reasons)}: {'; '.join(why)}")
    return problems


def describe(reasons):
    """The first reason a service is needed (a call: its operation and test), and how many more."""
    first = reasons[0]
    text = f"{first['operation']} in {first['test']}" if isinstance(first, dict) else first
    return text + (f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else "")


def unknown_functions(template, calls):
    """Recorded calls of a binary that no function of the template runs."""
    binaries = {r.get("Metadata", {}).get("BuildProperties", {}).get("Binary", n) for n, r in template["Resources"].items() if r["Type"] == "AWS::Lambda::Function"}
    return sorted({call["function"] for call in calls} - binaries)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("calls", help="directory of recorded calls (*.jsonl)")
    parser.add_argument("--transformed", default=".local/transformed", help="the transformed templates, <set>.json")
    arguments = parser.parse_args()
    calls = load_calls(arguments.calls)
    if not calls:
        sys.exit(f"network: no recorded calls in {arguments.calls}")
    problems = []
    for set_name, parameters in parameter_sets().items():
        path = pathlib.Path(arguments.transformed) / f"{set_name}.json"
        if not path.exists():
            problems.append(f"network [{set_name}]: {path} is missing (run scripts/transform.py)")
            continue
        template = json.loads(path.read_text())
        problems += [f"network [{set_name}]: calls recorded for {b}, which no function runs" for b in unknown_functions(template, calls)]
        problems += problems_of(set_name, Stack(template, parameters), calls)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"network: every VPC function and capacity provider reaches the services of its {len(calls)} recorded calls, in every parameter set")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
