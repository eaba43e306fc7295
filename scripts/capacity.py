#!/usr/bin/env python3
"""docs/CAPACITY.md's tables, computed from the figures `make bench` measured.

    python3 scripts/capacity.py                  print the tables
    python3 scripts/capacity.py --write FILE     put them between FILE's capacity markers
    python3 scripts/capacity.py --check FILE     fail when FILE's tables are not these

The per-send and per-grab loads come from bench/results/campaign.json (`make bench-campaign`,
also written by `make bench`), bench/results/latest.json and, for the risk function on the bus,
bench/results/controls.json's pattern detection (`make bench-controls`); the limits are AWS's documented
defaults, each with its source (LIMITS). Where a figure is an estimate rather than a
measurement, ASSUMPTIONS names it. A new bench run moves the tables: re-run --write.
"""

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- capacity:begin -->", "<!-- capacity:end -->"

# The load levels: sends/s and grabs/s. 1x is the template's default throttles (the grab route's
# GrabRateLimit 5,000/s, the send route's ApiRateLimit 900/s); WeChat's 2017 New Year's Eve peak
# was 760,000 red packets sent per second, at ten grabs a send.
LEVELS = [
    ("1x (the template's throttles)", 900, 5_000),
    ("10x", 9_000, 50_000),
    ("100x", 90_000, 500_000),
    ("WeChat 2017 peak", 760_000, 7_600_000),
]

# Estimates, not measurements: what this project cannot measure without an AWS account.
ASSUMPTIONS = {
    # A grab invocation in AWS: one Redis round trip inside the VPC (docs/DEPLOY.md's estimate).
    "grab_seconds": 0.010,
    # Packet views per grab: none counted. The grab's answer carries what the app shows; an app
    # that opens the packet's view before each grab doubles the grab's requests.
    "views_per_grab": 0,
    # Events per send (PacketSent, WalletDebited, the finalisation's) and per grab (its record).
    "events_per_send": 3,
    "events_per_grab": 1,
    # ElastiCache bills a simple read or write of up to 1 KB one ECPU, and a command that takes
    # more vCPU time proportionally more. One ECPU is taken as the engine CPU of a GET when the
    # network costs nothing (pipelined), measured on this machine's Redis 7.0 with
    # `redis-benchmark -n 1000000 -c 16 -P 16 -q GET k` between two `INFO cpu`: 0.79 to 0.85 us.
    # So a grab's ECPUs are an upper bound: unpipelined, a GET costs 11 us of the same CPU.
    "engine_us_per_ecpu": 0.82,
    # The grab rate across packets (template UserGrabLimit, on by default; docs/RISK.md): INCR and
    # EXPIRE NX on the user's counter per grab, two simple commands of a few bytes, one ECPU each.
    # They land in the users' slots, spread over the cache, never in the hot packet's.
    "rate_ecpu_per_grab": 2,
    # Lambda memory: grab 512 MB, send 1,024 MB, risk 256 MB (template.yaml).
    "grab_gb": 0.5,
    "send_gb": 1.0,
    "risk_gb": 0.25,
    # The risk function reads every grab's event (docs/RISK.md): every packet taken as one the
    # rules read (at most RiskMaxShares shares), an upper bound; a campaign's grabs cost only the
    # invocation. Its time is measured against DynamoDB Local, whose latency stands for AWS's.
}

# us-east-1 list prices, as docs/DEPLOY.md's cost table uses them.
PRICES = {
    "api_per_million": 1.00,
    "lambda_per_million": 0.20,
    "lambda_gb_second": 0.0000133334,
    "dynamodb_per_million_wru": 0.625,
    "ecpu_per_million": 0.0023,
    "events_per_million": 1.00,
}

# AWS's limits on the path: default, whether it can be raised, and where AWS says so.
LIMITS = {
    "api": ("API Gateway requests/s, per account and Region", 10_000, "yes (Service Quotas L-8A5B8E43)",
            "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html"),
    "lambda": ("Lambda concurrent executions, per Region", 1_000, "yes (L-B99A9384), to tens of thousands",
               "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"),
    "lambda_scaling": ("Lambda scaling, per function", 1_000, "no: 1,000 environments every 10 s",
                       "https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html"),
    "ecpu_slot": ("ElastiCache Serverless ECPU/s per hash slot (one packet's keys)", 30_000,
                  "no (90,000 reading from replicas)",
                  "https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/RedisConfiguration.html"),
    "ecpu_cache": ("ElastiCache Serverless ECPU/s per cache", 15_000_000, "no",
                   "https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/RedisConfiguration.html"),
    "dynamodb_table": ("DynamoDB on-demand write units/s per table", 40_000, "yes (L-AB614373)",
                       "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"),
    "dynamodb_partition": ("DynamoDB write units/s per partition", 1_000, "no",
                           "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"),
    "putevents": ("EventBridge PutEvents requests/s (us-east-1; 10 events a request from the Pipe)", 10_000,
                  "yes (lower in most Regions: 2,400 in us-east-2, 1,200 in many)",
                  "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"),
}


# What to do about a limit that cannot be raised, once a level passes it.
ADVICE = {
    "ecpu_slot": "one packet's hash slot, so deploy `CacheMode=nodes` (a shard's own CPU) for a packet this hot",
    "ecpu_cache": "a serverless cache's ECPUs, so split the traffic over caches (stacks) or node-based shards",
}


def load_figures(root=ROOT):
    """The measured figures the tables use, by name."""
    results = root / "bench" / "results"
    campaign = json.loads((results / "campaign.json").read_text())
    latest = json.loads((results / "latest.json").read_text())
    details = campaign["details"]
    coalesced = next(flood for flood in details["floods"] if flood["design"] == "ours_coalesced")
    patterns = json.loads((results / "controls.json").read_text())["patterns"]
    risk_grab = next(event for event in patterns["events"] if event["detail_type"] == "GrabRecorded")
    return {
        "send_wru": details["send_write_units"][0],
        "grab_wru": details["grab_write_units"][0],
        "redis_us_per_grab": coalesced["redis_cpu_us_per_fresh_grab"],
        "send_seconds": latest["details"]["send"]["p50_us"] / 1e6,
        "partition_ceiling": details["ledger_default"]["ceiling_units_per_s"],
        "units_per_share": details["ledger_default"]["partition_write_units"] / details["ledger_default"]["shares"],
        "risk_seconds": risk_grab["p50_us"] / 1e6,
        "risk_wru": risk_grab["write_units_per_event"],
    }


def loads(figures, sends, grabs):
    """Each limit's load at `sends`/s and `grabs`/s, in the limit's own unit."""
    a = ASSUMPTIONS
    risk = grabs * figures["risk_seconds"]
    concurrency = grabs * a["grab_seconds"] + sends * figures["send_seconds"] + risk
    ecpu_per_grab = figures["redis_us_per_grab"] / a["engine_us_per_ecpu"]
    events = sends * a["events_per_send"] + grabs * a["events_per_grab"]
    return {
        "api": sends + grabs * (1 + a["views_per_grab"]),
        "lambda": concurrency,
        # The environments needed, over the 1,000 a function may add each 10 s: 10 s steps.
        "lambda_scaling": max(grabs * a["grab_seconds"], sends * figures["send_seconds"], risk),
        # One packet grabbed at the whole grab rate: the hottest slot.
        "ecpu_slot": grabs * ecpu_per_grab,
        "ecpu_cache": grabs * (ecpu_per_grab + a["rate_ecpu_per_grab"]),
        "dynamodb_table": sends * figures["send_wru"] + grabs * (figures["grab_wru"] + figures["risk_wru"]),
        # The most a packet's partition takes: settle's ceiling, whatever the rate.
        "dynamodb_partition": figures["partition_ceiling"],
        "putevents": events / 10,
    }


def cost_per_hour(figures, sends, grabs):
    """List-price dollars per hour at `sends`/s and `grabs`/s (API, Lambda, DynamoDB writes,
    ElastiCache compute, events; storage and idle floors left out)."""
    a, p = ASSUMPTIONS, PRICES
    requests = sends + grabs * (1 + a["views_per_grab"])
    gb_seconds = (
        grabs * a["grab_seconds"] * a["grab_gb"]
        + sends * figures["send_seconds"] * a["send_gb"]
        + grabs * figures["risk_seconds"] * a["risk_gb"]
    )
    wru = sends * figures["send_wru"] + grabs * (figures["grab_wru"] + figures["risk_wru"])
    ecpu = grabs * (figures["redis_us_per_grab"] / a["engine_us_per_ecpu"] + a["rate_ecpu_per_grab"])
    events = sends * a["events_per_send"] + grabs * a["events_per_grab"]
    per_second = (
        requests * (p["api_per_million"] + p["lambda_per_million"]) / 1e6
        + grabs * p["lambda_per_million"] / 1e6
        + gb_seconds * p["lambda_gb_second"]
        + wru * p["dynamodb_per_million_wru"] / 1e6
        + ecpu * p["ecpu_per_million"] / 1e6
        + events * p["events_per_million"] / 1e6
    )
    return per_second * 3600


def number(value):
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def tables(figures):
    """The markdown between the markers."""
    lines = [
        "Measured here (bench/results/campaign.json, latest.json): "
        f"a send writes {figures['send_wru']:.1f} write units, a grab {figures['grab_wru']:.1f} "
        f"(with the wallet, GSIs included); a coalesced fresh grab costs Redis {figures['redis_us_per_grab']:.2f} us "
        f"of CPU; a send takes {figures['send_seconds'] * 1000:.0f} ms (p50, DynamoDB Local); settle writes a "
        f"packet's partition at most {figures['partition_ceiling']} units/s, {figures['units_per_share']:.1f} a share. "
        f"The risk function reads each grab's event off the grab path (bench/results/controls.json): "
        f"{figures['risk_seconds'] * 1000:.1f} ms (p50, DynamoDB Local) and {figures['risk_wru']:.1f} write units a grab, "
        "in the Lambda, scaling and table rows below.",
        "",
        "| limit | default | raisable | " + " | ".join(name for name, _, _ in LEVELS) + " | source |",
        "|---|---|---|" + "---|" * len(LEVELS) + "---|",
    ]
    level_loads = [loads(figures, sends, grabs) for _, sends, grabs in LEVELS]
    for key, (name, default, raisable, source) in LIMITS.items():
        cells = []
        for load in level_loads:
            used = load[key]
            if key == "lambda_scaling":
                seconds = math.ceil(used / default) * 10
                cells.append(f"{number(used)} envs: {seconds} s from zero")
            else:
                marker = " **over**" if used > default else ""
                cells.append(f"{number(used)} ({used / default:.0%}){marker}")
        lines.append(f"| {name} | {default:,} | {raisable} | " + " | ".join(cells) + f" | {source} |")
    lines += ["", "| level | sends/s | grabs/s | binds first | raise before the campaign | cost per hour |", "|---|---|---|---|---|---|"]
    for (name, sends, grabs), load in zip(LEVELS, level_loads):
        ratios = {key: load[key] / LIMITS[key][1] for key in LIMITS if key not in ("lambda_scaling", "dynamodb_partition")}
        first = max(ratios, key=ratios.get)
        over = [key for key, ratio in ratios.items() if ratio > 1]
        raise_list = ", ".join(
            f"{LIMITS[key][0].split(' per ')[0].split(',')[0]} to {number(load[key] * 1.25)}"
            for key in over if "no" != LIMITS[key][2][:2]
        ) or "nothing"
        fixed = [ADVICE[key] for key in over if LIMITS[key][2].startswith("no")]
        if fixed:
            raise_list += "; not raisable: " + "; ".join(fixed)
        lines.append(
            f"| {name} | {sends:,} | {grabs:,} | {LIMITS[first][0]} ({ratios[first]:.0%}) | {raise_list} | "
            f"${cost_per_hour(figures, sends, grabs):,.2f} |"
        )
    return "\n".join(lines) + "\n"


def replaced(text, block):
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + block + text[end:]


def main(argv):
    block = tables(load_figures())
    if len(argv) == 3 and argv[1] in ("--write", "--check"):
        path = Path(argv[2])
        text = path.read_text()
        expected = replaced(text, block)
        if argv[1] == "--write":
            path.write_text(expected)
            return 0
        if text != expected:
            print(f"{path}: the capacity tables are not what scripts/capacity.py computes; run it with --write")
            return 1
        return 0
    print(block, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
