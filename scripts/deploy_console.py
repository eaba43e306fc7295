#!/usr/bin/env python3
"""Puts the operators' console on a deployed stack: builds console/, writes its config.json from
the stack's outputs and parameters, uploads it under `console/` of the stack's console bucket and
invalidates the pages CloudFront may hold.

    .local/venv/bin/python scripts/deploy_console.py --stack red-packets [--region eu-west-1] [--skip-build]
    (make deploy-console STACK=red-packets)

The console then signs operators in through the operators' provider (`OperatorsIssuer`, client
`OperatorsConsoleClientId`) and calls the operators' API on its own origin (`/ops/`, the same
CloudFront distribution); the stack's own operators' pool sends operators back to `ConsoleUrl`
after signing in and out (docs/DEPLOY.md, "The operators' console"). Uses boto3 from SAM CLI's
virtualenv, with the caller's AWS credentials.
"""

import argparse
import json
import mimetypes
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONSOLE = ROOT / "console"
PREFIX = "console/"

# The outputs and parameters the console's config.json is made of (template.yaml).
OUTPUTS = ("ConsoleUrl", "ConsoleBucketName", "ConsoleDistributionId", "OperatorsIssuer", "OperatorsConsoleClientId")


def console_config(outputs, parameters):
    """config.json for the console in AWS (console/src/config.ts reads it)."""
    return {
        "signIn": "oidc",
        "apiBase": "",
        "authority": outputs["OperatorsIssuer"],
        "clientId": outputs["OperatorsConsoleClientId"],
        "rolesClaim": parameters.get("OperatorsRolesClaim") or "cognito:groups",
        "businessTimeZone": parameters.get("BusinessTimeZone") or "UTC",
    }


def cache_control(relative):
    """What CloudFront and browsers may keep: the page and its config are checked every time (a
    new build shows at once); vite's hashed assets never change under their name."""
    if relative in ("index.html", "config.json"):
        return "no-cache"
    if relative.startswith("assets/"):
        return "public, max-age=31536000, immutable"
    return "public, max-age=300"


def content_type(relative):
    kind, _ = mimetypes.guess_type(relative)
    return kind or "application/octet-stream"


def stack_facts(cloudformation, stack):
    (described,) = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    outputs = {o["OutputKey"]: o["OutputValue"] for o in described.get("Outputs", [])}
    parameters = {p["ParameterKey"]: p.get("ParameterValue", "") for p in described.get("Parameters", [])}
    missing = [name for name in OUTPUTS if name not in outputs]
    if missing:
        raise SystemExit(f"stack {stack} has no output {', '.join(missing)}: deploy template.yaml first")
    return outputs, parameters


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", required=True)
    parser.add_argument("--region")
    parser.add_argument("--skip-build", action="store_true", help="upload console/dist as it is")
    args = parser.parse_args()

    import boto3

    session = boto3.Session(region_name=args.region)
    outputs, parameters = stack_facts(session.client("cloudformation"), args.stack)
    if not args.skip_build:
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=CONSOLE, check=True)
        subprocess.run(["npm", "run", "build"], cwd=CONSOLE, check=True)
    dist = CONSOLE / "dist"
    (dist / "config.json").write_text(json.dumps(console_config(outputs, parameters)) + "\n")

    s3 = session.client("s3")
    bucket = outputs["ConsoleBucketName"]
    files = sorted(path for path in dist.rglob("*") if path.is_file())
    # Assets first, the page last: a browser never gets a page whose assets are not there yet.
    files.sort(key=lambda path: path.name in ("index.html", "config.json"))
    for path in files:
        relative = path.relative_to(dist).as_posix()
        s3.upload_file(
            str(path),
            bucket,
            PREFIX + relative,
            ExtraArgs={"ContentType": content_type(relative), "CacheControl": cache_control(relative)},
        )
    print(f"uploaded {len(files)} files to s3://{bucket}/{PREFIX}")
    session.client("cloudfront").create_invalidation(
        DistributionId=outputs["ConsoleDistributionId"],
        InvalidationBatch={
            "Paths": {"Quantity": 2, "Items": [f"/{PREFIX}index.html", f"/{PREFIX}config.json"]},
            "CallerReference": f"deploy-console-{time.time_ns()}",
        },
    )
    print(f"the console: {outputs['ConsoleUrl']}")


if __name__ == "__main__":
    sys.exit(main())
