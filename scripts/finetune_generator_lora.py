"""RuleRAG-FT generator side: LoRA-tune a causal LM on rule prompts (engine/methods/rulerag/training.py)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a file from anywhere: `python scripts/finetune_generator_lora.py`
    sys.path.insert(0, str(ROOT))

from engine.methods.rulerag.training import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
