"""Command line: methods, ask, eval, index, ingest, import-hotpot/-2wiki/-musique, mine-rules, train-retriever, train-r2ag, export-traces. Bad input prints a clear message and exits 2."""

from __future__ import annotations

import argparse
import logging
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.codec import SURROGATE
from engine.knowledge.loader import load_pack
from engine.errors import PackError, RagscopeError

if TYPE_CHECKING:
    from tqdm import tqdm

    from engine.evaluation.journal import Journal, JournalPlan
    from engine.evaluation.runner import Progress, QuestionResult
    from engine.knowledge.records import Pack, Question
    from engine.runner import Workbench
    from engine.trace import Trace

USAGE_ERROR = 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = _parser()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        _check_utf8(argv)
        args = parser.parse_args(argv)
        return args.handler(args)
    except (RagscopeError, OSError) as exc:  # OSError: a full disk, a name too long — the path and why, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _check_utf8(argv: Sequence[str]) -> None:
    """Undecodable argument bytes arrive as lone surrogates (PEP 383) and crash whatever prints or
    stores them later; refuse them here, where the user can still see which argument is at fault."""
    for position, arg in enumerate(argv, start=1):
        bad = SURROGATE.search(arg)
        if bad:
            code = ord(bad.group())
            what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"lone surrogate U+{code:04X}"
            shown = arg.encode("utf-8", "backslashreplace").decode("utf-8")
            raise RagscopeError(f"argument {position} '{shown[:80]}' is not valid UTF-8 text: {what} at "
                                f"character {bad.start() + 1}; retype it, or rename the file to a UTF-8 name")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine", description="ragscope engine")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    methods = sub.add_parser("methods", help="list the methods, users' own (plugins) included, with their -p "
                                             "parameters; a plugin that did not load is named on stderr (exit 2)")
    methods.set_defaults(handler=_methods)

    ask = sub.add_parser("ask", help="answer one question and print the steps")
    _pack_args(ask)
    ask.add_argument("--method", default="vanilla", help="method id (default vanilla)")
    ask.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                     help="method parameter, repeatable (e.g. -p k=8)")
    ask.add_argument("--json", action="store_true", help="print the trace JSON instead of the steps")
    ask.add_argument("question")
    ask.set_defaults(handler=_ask)

    ev = sub.add_parser("eval", help="evaluate methods on the pack's questions")
    _pack_args(ev)
    ev.add_argument("--method", default="vanilla", help="method id(s), comma-separated")
    ev.add_argument("--limit", type=int, default=0, help="first N questions only")
    ev.add_argument("--type", default="", help="only questions of these types, comma-separated")
    ev.add_argument("--out", type=Path, default=None, help="folder for metrics.json, results.csv, traces")
    ev.add_argument("--judge", action="store_true",
                    help="LLM backends: the model re-grades answers rule matching called hallucinated (CRAG)")
    ev.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                    help="method parameter, repeatable; set for every chosen method that has it (e.g. -p k=8)")
    ev.add_argument("--workers", type=int, default=1,
                    help="questions asked at once (default 1); pays off with --backend openai against a server "
                         "that serves many requests at once (vLLM). Results are those of one at a time")
    ev.add_argument("--resume", nargs="?", const=True, default=None, type=Path, metavar="DIR",
                    help="go on with the interrupted evaluation reporting to DIR (or to --out), asking only "
                         "the questions it had not finished")
    ev.set_defaults(handler=_eval)

    index = sub.add_parser("index", help="build or update the pack's dense index")
    index.add_argument("--pack", type=Path, required=True)
    index.set_defaults(handler=_index)

    ingest = sub.add_parser("ingest", help="build a new pack from .txt/.md/.html/.pdf/.jsonl/.tsv/.csv files")
    ingest.add_argument("paths", nargs="+", type=Path)
    ingest.add_argument("--out", type=Path, required=True)
    ingest.add_argument("--name", default="", help="pack name (default: the out folder's name)")
    ingest.set_defaults(handler=_ingest)

    from engine.evaluation.importers import DATASETS

    for dataset in DATASETS.values():
        importer = sub.add_parser(f"import-{dataset.name}", help=f"{dataset.title} → pack")
        importer.add_argument("file", type=Path)
        importer.add_argument("--out", type=Path, required=True)
        importer.add_argument("--limit", type=int, default=0, help="first N questions only (default 0: all)")
        importer.set_defaults(handler=_import_dataset, dataset=dataset.name)

    mine = sub.add_parser("mine-rules", help="mine closed-path rules (body length 1-2) from the pack's triples")
    mine.add_argument("--pack", type=Path, required=True, help="knowledge pack folder")
    mine.add_argument("--min-conf", type=float, default=0.3, help="minimum standard confidence (default 0.3)")
    mine.add_argument("--min-support", type=int, default=3, help="minimum support (default 3)")
    mine.add_argument("--min-head-coverage", type=float, default=0.0, help="minimum head coverage (default 0)")
    mine.add_argument("--max-rules", type=int, default=500, help="keep at most this many, best first (default 500)")
    mine.add_argument("--temporal", action="store_true",
                      help="thresholds on temporal support: body facts must not postdate the head fact")
    mine.add_argument("--out", type=Path, default=None,
                      help="rules.jsonl to write (default PACK/rules.mined.jsonl; never the pack's rules.jsonl "
                           "unless named here)")
    mine.set_defaults(handler=_mine_rules)

    train = sub.add_parser("train-retriever",
                           help="RuleRAG-FT: fine-tune the dense query encoder on question + rule → supporting docs")
    train.add_argument("--pack", type=Path, required=True, help="knowledge pack folder")
    train.add_argument("--epochs", type=int, default=None, help="passes over the training pairs (default 8)")
    train.add_argument("--max-steps", type=int, default=None, help="cap on optimiser steps (default 60)")
    train.add_argument("--seed", type=int, default=None, help="random seed (default 0)")
    train.set_defaults(handler=_train_retriever)

    r2ag = sub.add_parser("train-r2ag", help="R2AG: train the R2-Former (relevance only, or jointly with a frozen "
                                             "HF model's LM loss) on the pack's supporting_docs")
    _pack_args(r2ag)
    r2ag.add_argument("--k", type=int, default=10, help="documents per list; the checkpoint is tied to it (default 10)")
    r2ag.add_argument("--retriever", default="hybrid", help="candidate retriever: hybrid (default), dense, bm25")
    r2ag.add_argument("--order", default="retriever", choices=("retriever", "r"),
                      help="list order: the retriever's rank (default) or sorted by cosine r as in the paper")
    r2ag.add_argument("--epochs", type=int, default=None, help="relevance-only epochs (default 40)")
    r2ag.add_argument("--lm-epochs", type=int, default=None, help="joint epochs with an HF model (default 2)")
    r2ag.add_argument("--seed", type=int, default=None, help="random seed (default 42)")
    r2ag.add_argument("--out", type=Path, default=None,
                      help="checkpoint file (default $RAGSCOPE_HOME/r2ag/relevance.pt; <model>.pt with --backend hf)")
    r2ag.set_defaults(handler=_train_r2ag)

    export = sub.add_parser("export-traces", help="traces (eval --out's traces.jsonl, a History export, ask --json) → "
                                                  "OpenInference spans for Phoenix or any OpenTelemetry backend")
    export.add_argument("traces", type=Path, help="eval --out's traces.jsonl, a History export, or ask --json's output")
    export.add_argument("--format", choices=("openinference",), default="openinference", help="span format")
    export.add_argument("--out", type=Path, default=None, help="spans.jsonl to write, one JSON span per line")
    export.add_argument("--otlp-endpoint", default="", metavar="URL",
                        help="send the spans over OTLP/HTTP, e.g. http://127.0.0.1:6006/v1/traces (Phoenix)")
    export.add_argument("--project", default="ragscope", help="project Phoenix files them under (default ragscope)")
    export.add_argument("--session", default="", help="session.id for every exported run, to group them")
    export.add_argument("--timeout", type=float, default=10.0, help="seconds to keep trying to send (default 10)")
    export.set_defaults(handler=_export_traces)
    return parser


def _export_traces(args: argparse.Namespace) -> int:
    from engine.export.openinference import spans_jsonl, trace_spans
    from engine.export.otlp import endpoint_url, send_spans
    from engine.export.traces_file import read_traces
    from engine.files import write_text_atomic
    from engine.knowledge.writer import check_target

    if not (args.out or args.otlp_endpoint):
        raise RagscopeError("export-traces needs --out FILE, --otlp-endpoint URL, or both")
    if not 0 < args.timeout <= 600:  # also refuses nan
        raise RagscopeError(f"--timeout {args.timeout}: give the seconds to keep trying, more than 0 and at most 600")
    if not args.project.strip():
        raise RagscopeError("--project is empty; name the project the traces go to (default ragscope)")
    if args.out:
        check_target(args.out, folder=False)  # a bad target or URL fails before the file is read
    if args.otlp_endpoint:
        endpoint_url(args.otlp_endpoint)
    traces = read_traces(args.traces)
    spans = [span for trace in traces for span in trace_spans(trace, args.session)]
    if args.out:
        write_text_atomic(args.out, spans_jsonl(spans))
        print(f"wrote {len(spans)} spans of {len(traces)} traces to {args.out}")
    if args.otlp_endpoint:
        send_spans(spans, args.otlp_endpoint, project=args.project, timeout_s=args.timeout)
        print(f"sent {len(spans)} spans of {len(traces)} traces to {endpoint_url(args.otlp_endpoint)}")
    return 0


def _pack_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pack", type=Path, required=True, help="knowledge pack folder")
    parser.add_argument("--backend", default="offline", help="offline (default), hf or openai")
    parser.add_argument("--model", default="", help="hf: model folder, .gguf file or cached hub id; openai: model name")
    parser.add_argument("--quantization", default="auto", help="hf: auto (nf4 on CUDA), nf4, int8 (CUDA only) or none")
    parser.add_argument("--device", default="auto", help="hf: auto, cpu or cuda")
    parser.add_argument("--dtype", default="auto", help="hf: auto (bf16 where the hardware has it), bf16 or fp32")
    parser.add_argument("--base-url", default="", help="openai: server URL, e.g. http://127.0.0.1:8000/v1")
    parser.add_argument("--api-key", default="", help="openai: key, if the server wants one")


def _workbench(args: argparse.Namespace) -> Workbench:
    from engine.runner import Workbench

    options = {"model": args.model, "quantization": args.quantization, "device": args.device, "dtype": args.dtype,
               "base_url": args.base_url, "api_key": args.api_key}
    return Workbench(load_pack(args.pack), backend=args.backend, backend_options=options)


def _params(pairs: list[str]) -> dict[str, str]:
    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise RagscopeError(f"parameter {pair!r} is not NAME=VALUE")
        params[name.strip()] = value.strip()
    return params


def _methods(args: argparse.Namespace) -> int:
    """Each method with where it comes from: a plugin author's check that theirs loads."""
    from engine.methods.base import METHODS, method_ids
    from engine.methods.plugins import load_plugins
    from engine.params import param_specs

    plugins = load_plugins()
    for method_id in method_ids():
        cls = METHODS[method_id]
        print(f"{method_id:<16} {cls.label} ({plugins.source_of(method_id)})")
        print(f"{'':<16} -p " + " ".join(f"{s.name}={s.default}" for s in param_specs(cls.Params)))
    for problem in plugins.problems:
        print(f"error: {problem}", file=sys.stderr)
    return USAGE_ERROR if plugins.problems else 0


def _ask(args: argparse.Namespace) -> int:
    """A run that failed (untrained retriever, unusable checkpoint…) still prints its steps, then exits 2."""
    from engine.textview import format_step
    from engine.trace import ErrorStep

    workbench = _workbench(args)
    run = workbench.start(args.question, args.method, _params(args.param))
    for step in run:
        if not args.json:
            print(format_step(step), flush=True)
    if args.json:
        print(run.trace.to_json(indent=2))
    fatal = [s for s in run.trace.steps if isinstance(s, ErrorStep) and not s.recoverable]
    if fatal:
        print(f"error: the run failed: {fatal[0].message}", file=sys.stderr)
        return USAGE_ERROR
    return 0


def _eval(args: argparse.Namespace) -> int:
    """Each answer goes to a journal beside --out as it comes; the report appears in one rename at the end.

    Ctrl-C, or any failure once the journal exists, keeps it and says how to go on from it (--resume).
    """
    from tqdm import tqdm

    from engine.evaluation.report import format_tables
    from engine.evaluation.runner import evaluate, summarise, write_report
    from engine.knowledge.writer import staged

    methods = _eval_methods(args.method)
    params = _eval_params(args.param, methods)
    if args.limit < 0:
        raise RagscopeError(f"--limit {args.limit}: give a number of questions, or 0 for all")
    if args.workers < 1:
        raise RagscopeError(f"--workers {args.workers}: give how many questions to ask at once, at least 1")
    if args.judge and args.backend == "offline":
        raise RagscopeError("--judge needs a language model: use --backend hf or openai")
    out = _eval_out(args)
    workbench = _workbench(args)
    questions = _eval_questions(args, workbench.pack)
    plan = _eval_plan(workbench, methods, questions, params)
    # Claim --out before the first question: a taken or unwritable folder fails now, not after an hour
    # of evaluation (issue 15), and a second evaluation to the same folder finds the journal.
    journal, done = _eval_journal(out, plan, resume=args.resume is not None) if out else (None, ())
    try:
        workbench.retrieval.ensure_index()
        with tqdm(total=len(plan.steps), initial=len(done), unit="q", file=sys.stderr) as bar:
            results, traces = evaluate(workbench, methods, questions, params,
                                       progress=_eval_progress(journal, bar), workers=args.workers, done=done)
        if args.judge:
            results = _judged(workbench, results)
        if out:
            with staged(out) as folder:
                report = write_report(folder, results, traces)
        else:
            report = summarise(results)
    except BaseException:
        if journal:
            print(f"\nthe answers so far are kept in {journal.folder}; to go on from there, run the same command "
                  f"with --resume (or --resume {out})", file=sys.stderr)
        raise
    if journal:
        shutil.rmtree(journal.folder)
    print(format_tables(report))
    if out:
        print(f"\nwrote {out / 'metrics.json'}, {out / 'results.csv'}, {out / 'traces.jsonl'}")
    return 0


def _eval_progress(journal: Journal | None, bar: tqdm) -> Progress:
    """Journal each answer (synced) before counting it, so what the bar shows done is on disk."""
    def progress(result: QuestionResult, trace: Trace) -> None:
        if journal:
            journal.append(result, trace)
        bar.set_postfix_str(result.method)
        bar.update()

    return progress


def _eval_params(pairs: list[str], methods: list[str]) -> dict[str, dict[str, Any]]:
    """`-p` values, checked now for each chosen method that has the parameter; a name none has is an error."""
    from engine.methods.base import get_method
    from engine.params import build_params, param_specs

    given = _params(pairs)
    names = {method: {s.name for s in param_specs(get_method(method).Params)} for method in methods}
    known = set().union(*names.values())
    unknown = sorted(set(given) - known)
    if unknown:
        raise RagscopeError(f"unknown parameter(s) {', '.join(unknown)} for {', '.join(methods)}; "
                            f"known: {', '.join(sorted(known))}")
    chosen: dict[str, dict[str, Any]] = {}
    for method in methods:
        mine = {name: value for name, value in given.items() if name in names[method]}
        try:
            built = build_params(get_method(method).Params, mine)
        except RagscopeError as exc:
            raise RagscopeError(f"{method}: {exc}") from None
        chosen[method] = {name: getattr(built, name) for name in mine}
    for name in given:
        lacking = [method for method in methods if name not in names[method]]
        if lacking:
            having = [method for method in methods if name in names[method]]
            print(f"note: -p {name} applies to {', '.join(having)} only; {', '.join(lacking)} "
                  f"{'has' if len(lacking) == 1 else 'have'} no such parameter")
    return chosen


def _eval_out(args: argparse.Namespace) -> Path | None:
    """The report folder: --out, or the folder --resume names (given both, they must agree)."""
    if isinstance(args.resume, Path):
        if args.out and args.out.resolve() != args.resume.resolve():
            raise RagscopeError(f"--out {args.out} and --resume {args.resume} name different folders; give one")
        return args.resume
    if args.resume and not args.out:
        raise RagscopeError("--resume needs the evaluation's report folder: --resume DIR, or --out DIR --resume")
    return args.out


def _eval_plan(workbench: Workbench, methods: list[str], questions: list[Question],
               params: dict[str, dict[str, Any]]) -> JournalPlan:
    """What this evaluation asks and on what: a resumed run must match it, or results would mix."""
    from engine.evaluation.journal import JournalPlan

    pack = workbench.pack
    return JournalPlan(
        pack_path=str(pack.path or pack.info.name), backend=workbench.backend,
        options=tuple(sorted(workbench.backend_options.items())),
        steps=tuple((question.id, method) for method in methods for question in questions),
        fingerprint=pack.fingerprint,
        params=tuple((method, name, value) for method in methods for name, value in params[method].items()))


def _eval_journal(out: Path, plan: JournalPlan, *,
                  resume: bool) -> tuple[Journal, tuple[tuple[QuestionResult, Trace], ...]]:
    """A new journal beside `out` with `plan`, or with --resume the interrupted one and its finished answers."""
    from engine.evaluation.journal import Journal
    from engine.knowledge.writer import check_target

    check_target(out)
    journal = Journal.beside(out)
    if not resume:
        if journal.folder.exists():
            raise RagscopeError(f"{out}: an interrupted evaluation waits in {journal.folder}; add --resume to go on "
                                "with it, or delete that folder to start over")
        journal.write_plan(plan)
        return journal, ()
    if not journal.folder.exists():
        raise RagscopeError(f"{out}: no interrupted evaluation to resume ({journal.folder} does not exist); "
                            f"start one with --out {out}")
    saved, results, traces = journal.read()
    problems = saved.differences(plan)
    if problems:
        raise RagscopeError(f"cannot resume the evaluation in {journal.folder}: {'; '.join(problems)}. Resume it with "
                            "the same pack, --method, --type, --limit, -p and model, or delete that folder to start "
                            "over")
    return journal, tuple(zip(results, traces))


def _eval_methods(text: str) -> list[str]:
    """Method ids from a comma-separated list; unknown names fail now, not after an hour of evaluation."""
    from engine.methods.base import get_method, method_ids

    methods = [m.strip() for m in text.split(",") if m.strip()]
    if not methods:
        raise RagscopeError(f"--method {text!r} names no method; give one or more of {', '.join(method_ids())}, "
                            "comma-separated")
    for method in methods:
        get_method(method)
    return methods


def _eval_questions(args: argparse.Namespace, pack: Pack) -> list[Question]:
    questions = list(pack.questions)
    if args.type:
        wanted = {t.strip() for t in args.type.split(",")}
        questions = [q for q in questions if q.type in wanted]
    questions = questions[: args.limit] if args.limit > 0 else questions
    if not questions:
        raise RagscopeError(f"pack {args.pack} has no questions to evaluate (questions.jsonl)"
                            + (f" of type {args.type!r}" if args.type else ""))
    return questions


def _judged(workbench, results):  # noqa: ANN001, ANN202
    from engine.evaluation.judge import LlmJudge

    return LlmJudge(workbench.tools.chat).rejudge(results, workbench.pack.questions_by_id)


def _index(args: argparse.Namespace) -> int:
    import time

    from engine.retrieval.index import IndexProgress, with_eta
    from engine.retrieval.suite import open_retrieval
    from engine.settings import Settings

    def show(p: IndexProgress) -> None:
        print(f"\rindexing: {p.describe()}", end="\n" if p.done >= p.total else "", file=sys.stderr, flush=True)

    pack = load_pack(args.pack)
    retrieval = open_retrieval(pack, Settings())
    started = time.perf_counter()
    # sync, not ensure_index: that reports nothing when this process already synced the pack
    report = retrieval.index.sync(retrieval.chunks, with_eta(show))
    seconds = time.perf_counter() - started
    print(f"index {retrieval.index.name}: {len(retrieval.chunks)} chunks; embedded {report.added}, "
          f"kept {report.kept}, removed {report.removed} in {seconds:.1f} s")
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from engine.knowledge.ingest import ingest_paths
    from engine.knowledge.writer import check_target, write_pack

    check_target(args.out)  # before reading the files, which may take long
    pack = ingest_paths(args.paths, name=args.name or args.out.name)
    write_pack(pack, args.out)
    print(f"wrote pack {args.out}: {len(pack.documents)} documents, {len(pack.triples)} triples")
    return 0


def _import_dataset(args: argparse.Namespace) -> int:
    from engine.evaluation.importers import import_dataset
    from engine.knowledge.writer import check_target, write_pack

    check_target(args.out)  # before parsing the dataset, which may take long
    imported = import_dataset(args.file, args.dataset, name=args.out.name, limit=args.limit)
    pack = imported.pack
    write_pack(pack, args.out)
    skipped = "".join(f", skipped {n} {reason}" for reason, n in imported.skipped.items())
    print(f"wrote pack {args.out}: {len(pack.documents)} documents, {len(pack.questions)} questions, "
          f"{len(pack.triples)} triples{skipped}")
    return 0


def _mine_rules(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from engine.knowledge.writer import check_target
    from engine.rules.mining import MiningConfig, mine_rules, write_mined_rules

    if not (0.0 <= args.min_conf <= 1.0 and 0.0 <= args.min_head_coverage <= 1.0) \
            or args.min_support < 1 or args.max_rules < 1:
        raise RagscopeError("--min-conf and --min-head-coverage must lie in [0, 1]; --min-support and --max-rules "
                            "must be at least 1")
    pack = load_pack(args.pack)
    if not pack.triples:
        raise RagscopeError(f"pack {args.pack} has no triples.tsv; rules are mined from the KG's triples")
    out = args.out or args.pack / "rules.mined.jsonl"
    check_target(out, folder=False)  # a folder or an unwritable path fails before mining, leaving nothing
    config = MiningConfig(min_support=args.min_support, min_confidence=args.min_conf,
                          min_head_coverage=args.min_head_coverage, max_rules=args.max_rules,
                          temporal=args.temporal)
    with tqdm(unit="body", file=sys.stderr) as bar:
        mined = mine_rules(pack.triples, config,
                           progress=lambda done, total: (setattr(bar, "total", total), bar.update(done - bar.n)))
    write_mined_rules(mined, out)
    print(f"wrote {len(mined)} rules to {out}")
    return 0


def _train_retriever(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from engine.methods.rulerag.finetune import FinetuneConfig, train_query_encoder, with_config
    from engine.settings import Settings

    if any(v is not None and v < 1 for v in (args.epochs, args.max_steps)):
        raise RagscopeError("--epochs and --max-steps must be at least 1")
    config = with_config(FinetuneConfig(), epochs=args.epochs, max_steps=args.max_steps, seed=args.seed)
    pack = load_pack(args.pack)
    with tqdm(unit="step", file=sys.stderr) as bar:
        def progress(step: int, total: int, loss: float) -> None:
            bar.total = total
            bar.set_postfix_str(f"loss {loss:.3f}")
            bar.update(step - bar.n)

        result = train_query_encoder(pack, Settings(), config, progress=progress)
    manifest = result.manifest
    m = manifest.metrics
    print(f"trained on {manifest.train_pairs} pairs, {manifest.steps} steps ({manifest.epochs} epochs) "
          f"in {manifest.seconds:.1f} s; loss {m['loss_first']:.3f} → {m['loss_last']:.3f}")
    print(f"held-out ({manifest.heldout_pairs} pairs) recall@5 {m['recall@5_before']:.3f} → {m['recall@5_after']:.3f}, "
          f"recall@10 {m['recall@10_before']:.3f} → {m['recall@10_after']:.3f}")
    print(f"saved {result.folder}; use it with -p retriever=dense-ft")
    return 0


def _train_r2ag(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from tqdm import tqdm

    from engine.knowledge.writer import check_target
    from engine.methods.r2ag.training import TrainConfig, train_r2ag
    from engine.retrieval.suite import RETRIEVER_NAMES

    if args.backend not in ("offline", "hf"):
        raise RagscopeError(f"train-r2ag takes --backend offline (relevance only) or hf (joint); got {args.backend!r}")
    if args.retriever not in RETRIEVER_NAMES:
        raise RagscopeError(f"unknown retriever {args.retriever!r}; known: {', '.join(RETRIEVER_NAMES)}")
    if args.k < 1 or any(v is not None and v < 1 for v in (args.epochs, args.lm_epochs)):
        raise RagscopeError("--k, --epochs and --lm-epochs must be at least 1")
    if args.out:
        check_target(args.out, folder=False)  # before training, which takes minutes
    chosen = {"epochs": args.epochs, "lm_epochs": args.lm_epochs, "seed": args.seed}
    config = replace(TrainConfig(k=args.k, retriever=args.retriever, list_order=args.order),
                     **{name: value for name, value in chosen.items() if value is not None})
    workbench = _workbench(args)
    chat = workbench.tools.chat if args.backend == "hf" else None
    with tqdm(unit="step", file=sys.stderr) as bar:
        def progress(step: int, total: int, loss: float) -> None:
            bar.total = total
            bar.set_postfix_str(f"loss {loss:.3f}")
            bar.update(step - bar.n)

        result = train_r2ag(workbench.pack, workbench.retrieval, config, chat=chat, out=args.out, progress=progress)
    m, meta = result.meta.metrics, result.meta
    print(f"trained the R2-Former ({meta.objective}, k={meta.k}, {int(m['train_lists'])} lists) in "
          f"{result.seconds:.1f} s")
    for part in ("train", "heldout"):
        if f"{part}_map_retriever" in m:
            print(f"{part} ({int(m[part + '_lists'])} lists) MAP: retriever order {m[part + '_map_retriever']:.4f}, "
                  f"by r {m[part + '_map_r']:.4f}, R2-Former {m[part + '_map_r2former']:.4f}")
    print(f"saved {result.path}" + (f" for {meta.llm}" if meta.llm else " (relevance only: re-ranks; injects nothing)"))
    return 0
