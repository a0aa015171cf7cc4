"""Where the test fixtures and the repository live (importable from any test module)."""

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
MINI_PACK = TESTS / "fixtures" / "packs" / "mini"
DEMO_PACK = ROOT / "assets" / "packs" / "demo"
