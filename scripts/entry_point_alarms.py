"""Every entry point pages: checks on a transformed template for one parameter set (a `cfn.Stack`)
that an alarm notifying the stack's alarm topic watches

- every function's throttles (AWS/Lambda `Throttles`, dimension `FunctionName`);
- every operators' route (`/ops/...`) at API Gateway: its API's `5xx` (dimensions `ApiId` and
  `Stage`: every route of the API) or the route's own (with `Route`); the routes are those of the
  API Gateway resources and of each API's OpenAPI body (a SAM HttpApi's);
- every CloudFront distribution's `5xxErrorRate` (dimensions `DistributionId` and `Region`
  `Global`) when the stack is in us-east-1, and never in another Region: CloudFront publishes its
  metrics in us-east-1 only, so an alarm elsewhere would never leave OK (scripts/console_alarm.py
  carries the console's to us-east-1 for such a stack);
- every node a failover can promote, for each per-node metric an alarm reads of a replication
  group: `<group>-<shard, 4 digits>-<node, 3 digits>` for `NumNodeGroups` shards of
  1 + `ReplicasPerNodeGroup` nodes, and no node the group does not have.

An alarm's metrics are its own or those of its metric math that its returned expression reads.
Run by scripts/transform.py on every parameter set; scripts/tests/test_alarms.py removes each
alarm in turn and sees its check fail.
"""

import re

ALARM_TOPIC = "AlarmTopic"
CLOUDFRONT_METRICS_REGION = "us-east-1"
OPERATORS_PATH = "/ops/"


def _dimensions(listed):
    return {dimension["Name"]: dimension["Value"] for dimension in listed or []}


def _read_by_returned(queries):
    """The queries of a metric-math alarm that its returned value reads, through expressions."""
    by_id = {query["Id"]: query for query in queries}
    pending = [query for query in queries if query.get("ReturnData", True)]
    read = {}
    while pending:
        query = pending.pop()
        if query["Id"] in read:
            continue
        read[query["Id"]] = query
        for named in re.findall(r"\b[a-z][A-Za-z0-9_]*\b", query.get("Expression", "")):
            if named in by_id:
                pending.append(by_id[named])
    return list(read.values())


def watched(stack):
    """(alarm, namespace, metric, {dimension: value}) of every metric that an alarm the stack
    creates, notifying the alarm topic, reads."""
    topic = stack.resource_ref(ALARM_TOPIC)
    for name in stack.created("AWS::CloudWatch::Alarm"):
        alarm = stack.properties(name)
        if topic not in alarm.get("AlarmActions", []):
            continue
        if "MetricName" in alarm:
            yield name, alarm.get("Namespace"), alarm["MetricName"], _dimensions(alarm.get("Dimensions"))
        for query in _read_by_returned(alarm.get("Metrics", [])):
            if "MetricStat" in query:
                metric = query["MetricStat"]["Metric"]
                yield name, metric["Namespace"], metric["MetricName"], _dimensions(metric.get("Dimensions"))


def unthrottled_functions(stack):
    throttled = {dimensions.get("FunctionName") for _, namespace, metric, dimensions in watched(stack)
                 if (namespace, metric) == ("AWS/Lambda", "Throttles")}
    return [f"{function}: no alarm on its Throttles notifies the alarm topic"
            for function in stack.created("AWS::Lambda::Function") if stack.resource_ref(function) not in throttled]


def operators_routes(stack):
    """{API's logical id: its route keys under /ops/}."""
    routes = {}
    for route in stack.created("AWS::ApiGatewayV2::Route"):
        properties = stack.properties(route)
        if properties["RouteKey"].partition(" ")[2].startswith(OPERATORS_PATH):
            routes.setdefault(stack.logical_id(properties["ApiId"]), []).append(properties["RouteKey"])
    for api in stack.created("AWS::ApiGatewayV2::Api"):
        for path, operations in stack.resources[api].get("Properties", {}).get("Body", {}).get("paths", {}).items():
            if path.startswith(OPERATORS_PATH):
                routes.setdefault(api, []).extend(f"{method.upper()} {path}" for method in operations
                                                  if not method.startswith("x-amazon"))
    return routes


def operators_routes_without_5xx_alarm(stack):
    problems = []
    gateway = [dimensions for _, namespace, metric, dimensions in watched(stack)
               if (namespace, metric) == ("AWS/ApiGateway", "5xx")]
    for api, keys in sorted(operators_routes(stack).items()):
        stages = {stack.properties(stage)["StageName"] for stage in stack.created("AWS::ApiGatewayV2::Stage")
                  if stack.logical_id(stack.properties(stage)["ApiId"]) == api}
        on_api = [d for d in gateway if d.get("ApiId") == stack.resource_ref(api) and d.get("Stage") in stages]
        if any("Route" not in d for d in on_api):
            continue
        routed = {d["Route"] for d in on_api}
        problems += [f"{api}: no alarm on the 5xx of {key} (or of its API's stage) notifies the alarm topic"
                     for key in sorted(keys) if key not in routed]
    return problems


def distributions_without_5xx_alarm(stack):
    region = stack.ref("AWS::Region")
    watching = {dimensions.get("DistributionId") for _, namespace, metric, dimensions in watched(stack)
                if (namespace, metric) == ("AWS/CloudFront", "5xxErrorRate") and dimensions.get("Region") == "Global"}
    problems = []
    for distribution in stack.created("AWS::CloudFront::Distribution"):
        alarmed = stack.resource_ref(distribution) in watching
        if region == CLOUDFRONT_METRICS_REGION and not alarmed:
            problems.append(f"{distribution}: no alarm on its 5xxErrorRate (Region Global) notifies the alarm topic")
        if region != CLOUDFRONT_METRICS_REGION and alarmed:
            problems.append(f"{distribution}: an alarm in {region} on CloudFront's metrics, which are in "
                            f"{CLOUDFRONT_METRICS_REGION} only, would never leave OK")
    return problems


def cache_nodes(stack, group):
    """The ids of every node of the replication group (ElastiCache's CacheClusterId)."""
    properties = stack.properties(group)
    if "NumNodeGroups" not in properties or "NodeGroupConfiguration" in properties:
        raise ValueError(f"{group}: only NumNodeGroups and ReplicasPerNodeGroup are read here")
    shards, replicas = int(properties["NumNodeGroups"]), int(properties.get("ReplicasPerNodeGroup", 0))
    name = stack.resource_ref(group)
    return {f"{name}-{shard:04d}-{node:03d}" for shard in range(1, shards + 1) for node in range(1, replicas + 2)}


def cache_nodes_unwatched(stack):
    problems = []
    for group in stack.created("AWS::ElastiCache::ReplicationGroup"):
        nodes = cache_nodes(stack, group)
        prefix = stack.resource_ref(group) + "-"
        read = {}
        for alarm, namespace, metric, dimensions in watched(stack):
            node = dimensions.get("CacheClusterId", "")
            if namespace == "AWS/ElastiCache" and node.startswith(prefix):
                read.setdefault((alarm, metric), set()).add(node)
        if not read:
            problems.append(f"{group}: no alarm reads its nodes' metrics")
        for (alarm, metric), ids in sorted(read.items()):
            for node in sorted(nodes - ids):
                problems.append(f"{alarm}: no {metric} of {node}, a node a failover can promote")
            for node in sorted(ids - nodes):
                problems.append(f"{alarm}: {metric} of {node}, which {group} does not have")
    return problems


def problems(stack):
    return (unthrottled_functions(stack) + operators_routes_without_5xx_alarm(stack)
            + distributions_without_5xx_alarm(stack) + cache_nodes_unwatched(stack))
