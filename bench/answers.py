"""Every method's answers on every question of the demo pack, geo and the HotpotQA slice (offline
backend), written to a JSON snapshot, or compared with an earlier one: a refactor that claims
"behaviour unchanged" shows it here (issue 24). Besides the answer it keeps the confidence, the
refusal, the held-back guess, the evidence order and the sequence of step kinds.

Usage: python bench/answers.py OUT.json [--packs demo,geo,hotpot] [--methods a,b] [--against OLD.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from common import fresh_settings
from engine.knowledge.loader import load_pack
from engine.methods.base import method_ids
from engine.runner import Workbench
from engine.trace import AnswerStep
from llm_quality import pack_folder


def snapshot(pack_name: str, methods: list[str]) -> dict[str, dict[str, dict]]:
    pack = load_pack(pack_folder(pack_name))
    workbench = Workbench(pack, fresh_settings())
    out: dict[str, dict[str, dict]] = {}
    for method in methods:
        rows = out.setdefault(method, {})
        for question in pack.questions:
            trace = workbench.ask(question.question, method, question_id=question.id)
            answer = next((s for s in reversed(trace.steps) if isinstance(s, AnswerStep)), None)
            rows[question.id] = {
                "answer": answer.text if answer else None,
                "confidence": round(answer.confidence, 6) if answer else None,
                "refused": answer.refused if answer else None,
                "guess": answer.guess if answer else None,
                "evidence": list(answer.evidence) if answer else None,
                "kinds": [s.kind for s in trace.steps],
            }
        print(f"{pack_name:6s} {method:8s} {len(rows)} questions", flush=True)
    return out


def differences(old: dict, new: dict) -> list[str]:
    lines = []
    for pack, methods in old.items():
        for method, rows in methods.items():
            for qid, before in rows.items():
                after = new.get(pack, {}).get(method, {}).get(qid)
                if after != before:
                    changed = [k for k in before if after is None or before[k] != after.get(k)]
                    lines.append(f"{pack}/{method}/{qid}: {', '.join(changed)} "
                                 f"({before.get('answer')!r} → {after and after.get('answer')!r})")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out", type=Path)
    parser.add_argument("--packs", default="demo,geo,hotpot")
    parser.add_argument("--methods", default=",".join(method_ids()))
    parser.add_argument("--against", type=Path)
    args = parser.parse_args()
    methods = args.methods.split(",")
    result = {pack: snapshot(pack, methods) for pack in args.packs.split(",")}
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    if args.against:
        diff = differences(json.loads(args.against.read_text(encoding="utf-8")), result)
        total = sum(len(rows) for methods_ in result.values() for rows in methods_.values())
        print(f"{total - len(diff)} of {total} method answers identical to {args.against}")
        print("\n".join(diff[:50]))
        sys.exit(1 if diff else 0)


if __name__ == "__main__":
    main()
