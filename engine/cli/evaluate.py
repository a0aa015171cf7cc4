"""`eval`: methods × the pack's questions through the shared evaluation loop (engine.app.evaluations), with
a journal beside --out that `--resume` goes on from; metrics.json, results.csv, traces.jsonl and run_card.json
(what produced the report: engine.evaluation.run_card) at the end. `--shard I/N` asks one of N disjoint slices of
the questions (engine.evaluation.shards), for `merge-evals` to join.

Exit status: 0 all answered; 2 bad input or a model that cannot open (nothing asked), or a failure that kept the
journal for --resume; BACKEND_FAILED (3) the report is complete, but some answers rest on a failed backend
(issue 26): a model server answering HTTP 500 or nonsense, a vector store gone mid-way. Those runs are in the
report, scored as misses and counted as failed."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from engine.cli.command import Command, add_model_options, add_param_option, parse_params, progress_bar, workbench
from engine.errors import RagscopeError

if TYPE_CHECKING:
    from engine.app.evaluations import EvaluationJob
    from engine.evaluation.journal import JournalPlan
    from engine.evaluation.runner import QuestionResult
    from engine.evaluation.shards import Shard
    from engine.knowledge.records import Pack, Question
    from engine.trace import Trace

BACKEND_FAILED = 3  # finished, but an answer rests on a failed backend (also `ask`'s)
RESUME_HINT = ("Resume it with the same pack, --method, --type, --limit, -p and model, or delete that folder to "
               "start over")


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_options(parser)
    parser.add_argument("--method", default="vanilla", help="method id(s), comma-separated")
    parser.add_argument("--limit", type=int, default=0, help="first N questions only")
    parser.add_argument("--type", default="", help="only questions of these types, comma-separated")
    parser.add_argument("--shard", default="", metavar="I/N",
                        help="ask only shard I of N (1-based): questions I, I+N, I+2N … of those --type and --limit "
                             "chose, so N machines split one evaluation; join the reports with merge-evals")
    parser.add_argument("--out", type=Path, default=None, help="folder for metrics.json, results.csv, traces")
    parser.add_argument("--judge", action="store_true",
                        help="LLM backends: the model re-grades answers rule matching called hallucinated (CRAG)")
    add_param_option(parser, "method parameter, repeatable; set for every chosen method that has it (e.g. -p k=8)")
    parser.add_argument("--workers", type=int, default=1,
                        help="questions asked at once (default 1); pays off with --backend openai against a server "
                             "that serves many requests at once (vLLM). Results are those of one at a time")
    parser.add_argument("--resume", nargs="?", const=True, default=None, type=Path, metavar="DIR",
                        help="go on with the interrupted evaluation reporting to DIR (or to --out), asking only "
                             "the questions it had not finished")


def _run(args: argparse.Namespace) -> int:
    """Each answer goes to a journal beside --out as it comes; the report appears in one rename at the end.

    Ctrl-C, or any failure once the journal exists, keeps it and says how to go on from it (--resume).
    """
    from engine.app.evaluations import method_params, plan_evaluation
    from engine.evaluation import runner
    from engine.evaluation.report import format_tables
    from engine.evaluation.run_card import make_run_card, utc_now
    from engine.evaluation.shards import WHOLE, Shard
    from engine.knowledge.writer import staged

    started = utc_now()
    shard = Shard.parse(args.shard) if args.shard else WHOLE
    methods = _methods(args.method)
    params, notes = method_params(methods, parse_params(args.param))
    for note in notes:
        print(f"note: -p {note}")
    if args.limit < 0:
        raise RagscopeError(f"--limit {args.limit}: give a number of questions, or 0 for all")
    if args.workers < 1:
        raise RagscopeError(f"--workers {args.workers}: give how many questions to ask at once, at least 1")
    if args.judge and args.backend == "offline":
        raise RagscopeError("--judge needs a language model: use --backend hf or openai")
    out = _out(args)
    bench = workbench(args)
    chosen = _questions(args, bench.pack)
    questions = _shard(shard, chosen)
    plan = plan_evaluation(bench, methods, questions, params)
    _ = bench.tools  # the model opens now: one that cannot (no --model, a bad folder) is exit 2 before any question
    # Claim --out before the first question: a taken or unwritable folder fails now, not after an hour
    # of evaluation (issue 15), and a second evaluation to the same folder finds the journal.
    job = _job(out, plan, resume=args.resume is not None)
    try:
        bench.retrieval.ensure_index()
        with progress_bar("q", total=job.total, initial=job.done) as bar:
            def progress(result: QuestionResult, trace: Trace) -> None:
                bar.set_postfix_str(result.method)
                bar.update()

            results, traces = job.run(bench, workers=args.workers, progress=progress)
        judged = _judged(bench, results) if args.judge else None
        results = judged.results if judged else results
        if out:
            card = make_run_card(pack=bench.pack, backend=bench.backend, backend_options=bench.backend_options,
                                 embedder=bench.settings.embedder, methods=methods, params=params,
                                 judge=args.judge, all_question_ids=[q.id for q in chosen], shard=shard,
                                 command=command_line(args, out), started=started, finished=utc_now())
            with staged(out) as folder:
                report = runner.write_report(folder, results, traces)
                card.write(folder)
        else:
            report = runner.summarise(results)
    except BaseException:
        if job.journal:
            print(f"\nthe answers so far are kept in {job.journal.folder}; to go on from there, run the same command "
                  f"with --resume (or --resume {out})", file=sys.stderr)
        raise
    if job.journal:
        shutil.rmtree(job.journal.folder)
    print(format_tables(report))
    if out:
        print(f"\nwrote {out / 'metrics.json'}, {out / 'results.csv'}, {out / 'traces.jsonl'}, "
              f"{out / 'run_card.json'}")
    failures = runner.failure_summary(results)
    if failures:
        print(f"\nerror: {failures}\nThose runs stay in every metric, each scored as a miss (EM 0), and are counted "
              "in the 'failed' column; fix the backend and evaluate again.", file=sys.stderr)
    if judged and judged.failures:
        print(f"\nerror: {len(judged.failures)} of {judged.asked} judge calls failed; those answers keep their "
              f"rule-matching grade (first: {judged.failures[0]}); fix the judge's backend and evaluate again.",
              file=sys.stderr)
    return BACKEND_FAILED if failures or (judged and judged.failures) else 0


def _methods(text: str) -> list[str]:
    """Method ids from a comma-separated list; unknown names fail now, not after an hour of evaluation."""
    from engine.methods.base import get_method, method_ids

    methods = [m.strip() for m in text.split(",") if m.strip()]
    if not methods:
        raise RagscopeError(f"--method {text!r} names no method; give one or more of {', '.join(method_ids())}, "
                            "comma-separated")
    for method in methods:
        get_method(method)
    return methods


def _out(args: argparse.Namespace) -> Path | None:
    """The report folder: --out, or the folder --resume names (given both, they must agree)."""
    if isinstance(args.resume, Path):
        if args.out and args.out.resolve() != args.resume.resolve():
            raise RagscopeError(f"--out {args.out} and --resume {args.resume} name different folders; give one")
        return args.resume
    if args.resume and not args.out:
        raise RagscopeError("--resume needs the evaluation's report folder: --resume DIR, or --out DIR --resume")
    return args.out


def _questions(args: argparse.Namespace, pack: Pack) -> list[Question]:
    questions = list(pack.questions)
    if args.type:
        wanted = {t.strip() for t in args.type.split(",")}
        questions = [q for q in questions if q.type in wanted]
    questions = questions[: args.limit] if args.limit > 0 else questions
    if not questions:
        raise RagscopeError(f"pack {args.pack} has no questions to evaluate (questions.jsonl)"
                            + (f" of type {args.type!r}" if args.type else ""))
    return questions


def _shard(shard: Shard, questions: list[Question]) -> list[Question]:
    """`shard`'s share of the chosen questions; a shard left with none is an error (too many shards)."""
    mine = shard.take(questions)
    if not mine:
        raise RagscopeError(f"--shard {shard}: only {len(questions)} question(s) to split, so shard {shard.index} "
                            f"has none; use at most {len(questions)} shards")
    return mine


# The options that decide what an evaluation asks and how (not --resume, --workers: they change neither).
_RECORDED = (("pack", "--pack"), ("backend", "--backend"), ("model", "--model"), ("quantization", "--quantization"),
             ("device", "--device"), ("dtype", "--dtype"), ("base_url", "--base-url"), ("method", "--method"),
             ("type", "--type"), ("limit", "--limit"), ("shard", "--shard"), ("judge", "--judge"), ("out", "--out"))


def command_line(args: argparse.Namespace, out: Path | None = None) -> list[str]:
    """The eval command as parsed, options at their defaults left out, -p pairs last; never the api key."""
    defaults = vars(COMMAND_PARSER.parse_args(["--pack", "."]))
    words = ["python", "-m", "engine", "eval"]
    for dest, flag in _RECORDED:
        value = out if dest == "out" else getattr(args, dest, None)
        if dest != "pack" and (value == defaults[dest] or value is None):
            continue
        words += [flag] if value is True else [flag, str(value)]
    for pair in args.param:
        words += ["-p", pair]
    return words


def _job(out: Path | None, plan: JournalPlan, *, resume: bool) -> EvaluationJob:
    """A new evaluation with its journal beside `out`, or with --resume the interrupted one, strictly
    checked against `plan`; without --out, one kept in memory only."""
    from engine.app.evaluations import EvaluationJob
    from engine.evaluation.journal import Journal
    from engine.knowledge.writer import check_target

    if out is None:
        return EvaluationJob(plan)
    check_target(out)
    journal = Journal.beside(out)
    if not resume:
        if journal.folder.exists():
            raise RagscopeError(f"{out}: an interrupted evaluation waits in {journal.folder}; add --resume to go on "
                                "with it, or delete that folder to start over")
        return EvaluationJob.begin(plan, journal)
    if not journal.folder.exists():
        raise RagscopeError(f"{out}: no interrupted evaluation to resume ({journal.folder} does not exist); "
                            f"start one with --out {out}")
    job = EvaluationJob.read(journal)
    job.check(plan, RESUME_HINT)
    return job


def _judged(bench, results):  # noqa: ANN001, ANN202
    from engine.evaluation.judge import LlmJudge

    return LlmJudge(bench.tools.chat).rejudge(results, bench.pack.questions_by_id)


COMMAND = Command("eval", "evaluate methods on the pack's questions", _arguments, _run)
COMMAND_PARSER = argparse.ArgumentParser(add_help=False)
_arguments(COMMAND_PARSER)
