"""The template's functions laid out as `sam build` lays them out, from the host's own binaries.

    scripts/sam_stage.py BUILD_DIR TARGET_DIR ARCH

For each function the template builds with cargo-lambda (`Metadata.BuildMethod:
rust-cargolambda`), its `BuildProperties.Binary` from TARGET_DIR (cargo's debug output, built
by `cargo build --workspace --bins`) becomes BUILD_DIR/<LogicalId>/bootstrap, and
BUILD_DIR/template.yaml is the template with each such function's `CodeUri` naming that folder
and every `Architectures` set to ARCH (the host's: x86_64 or arm64), as `sam build` writes it.
`sam local invoke --template BUILD_DIR/template.yaml` then runs the host's binaries in SAM's
Lambda containers natively: no second build for another architecture and no qemu. The arm64
build the stack deploys is `make build`'s (cargo-lambda and zig), checked under AWS's emulator
by `make verify-build`.

Fails when a function names a binary TARGET_DIR does not hold, or a build method this does not
know: what `sam build` would build otherwise is not what this stages.
"""

import os
import shutil
import sys
from pathlib import Path

from samcli.yamlhelper import yaml_dump, yaml_parse

ROOT = Path(__file__).resolve().parent.parent


def stage(template_text: str, build_dir: Path, target_dir: Path, arch: str) -> dict:
    """The built template, with each cargo-lambda function's bootstrap staged under build_dir."""
    template = yaml_parse(template_text)
    function_globals = template.get("Globals", {}).get("Function", {})
    if "Architectures" in function_globals:
        function_globals["Architectures"] = [arch]
    for name, resource in template["Resources"].items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        metadata = resource.setdefault("Metadata", {})
        method = metadata.get("BuildMethod")
        if method != "rust-cargolambda":
            raise SystemExit(f"{name}: BuildMethod {method!r}, which this staging does not build")
        binary = target_dir / metadata["BuildProperties"]["Binary"]
        if not binary.is_file():
            raise SystemExit(f"{name}: {binary} is missing (cargo build --workspace --bins first)")
        folder = build_dir / name
        folder.mkdir(parents=True, exist_ok=True)
        bootstrap = folder / "bootstrap"
        bootstrap.unlink(missing_ok=True)
        try:
            os.link(binary, bootstrap)
        except OSError:
            shutil.copy2(binary, bootstrap)
        metadata["SamResourceId"] = name
        properties = resource["Properties"]
        properties["CodeUri"] = name
        if "Architectures" in properties:
            properties["Architectures"] = [arch]
    return template


def main() -> None:
    build_dir, target_dir, arch = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    if arch not in ("x86_64", "arm64"):
        raise SystemExit(f"ARCH must be x86_64 or arm64, not {arch!r}")
    build_dir.mkdir(parents=True, exist_ok=True)
    template = stage((ROOT / "template.yaml").read_text(), build_dir, target_dir, arch)
    (build_dir / "template.yaml").write_text(yaml_dump(template))


if __name__ == "__main__":
    main()
