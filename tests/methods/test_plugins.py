"""Users' own methods: plugin files in $RAGSCOPE_HOME/methods and `ragscope.methods` entry points."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import pytest

from engine.cli import main
from engine.errors import RagscopeError, UnknownNameError
from engine.methods import plugins
from engine.methods.base import METHODS, get_method, method_ids
from engine.methods.plugins import PluginProblem, load_plugins
from paths import MINI_PACK, ROOT
from plugin_home import add_example, write_plugin

BUILT_INS = ("hybrid", "r2ag", "ras", "rulerag", "tog2", "vanilla")

# A whole method, with {id}, {label}, {params} and {run} to vary; {before} and {after} wrap it.
TEMPLATE = """\
{before}
from dataclasses import dataclass
from engine.methods import Method, register
from engine.params import param
from engine.trace import AnswerStep


@dataclass(frozen=True)
class Params:
    {params}


@register
class Mine(Method):
    id, label, description, Params = {id!r}, {label!r}, "says 42", Params

    def run(self, question, ctx):
        {run}
{after}
"""


def method_code(id: str = "mine", *, label: str = "Mine", params: str = "n: int = param(3, min=1, max=9, help='n')",
                run: str = "yield AnswerStep(iteration=1, text='42')", before: str = "", after: str = "") -> str:
    return TEMPLATE.format(id=id, label=label, params=params, run=run, before=before, after=after)


def ask(*argv: str) -> int:
    return main(["ask", "--pack", str(MINI_PACK), *argv])


def test_the_readme_example_is_listed_after_the_built_ins_with_its_file(plugin_home):
    path = add_example(plugin_home)
    assert method_ids() == (*BUILT_INS, "keyword_rerank")
    assert load_plugins().source_of("keyword_rerank") == str(path)
    assert load_plugins().source_of("vanilla") == "built-in"
    assert sys.modules["ragscope_user_methods.keyword_rerank"].KeywordRerank is METHODS["keyword_rerank"]


def test_the_readme_example_answers_through_cli_ask_offline(plugin_home, capsys):
    add_example(plugin_home)
    assert ask("--method", "keyword_rerank", "-p", "k=2", "-p", "min_confidence=0", "When was Grace Hopper born?") == 0
    out = capsys.readouterr().out
    assert "[1] retrieval     BM25 pool" in out and "[1] retrieval     Most shared words" in out
    assert "answer: 1906" in out
    reranked = out.split("Most shared words")[1].split("[1] answer")[0]
    assert "m07#0" in reranked and reranked.count("#0") == 2  # k=2 chunks read, Grace Hopper's first


def test_the_runs_answer_policy_settles_a_users_method_as_it_does_a_built_in(plugin_home, mini_workbench):
    """Issue 24: min_confidence is the run's, so a method that declares nothing is calibrated and refused alike."""
    from engine.params import AnswerPolicy

    add_example(plugin_home)
    strict = mini_workbench.ask("When was Grace Hopper born?", "keyword_rerank", {"k": 2}, policy=AnswerPolicy(1.0))
    assert strict.answer.refused and (strict.answer.guess, strict.answer.min_confidence) == ("1906", 1.0)
    lenient = mini_workbench.ask("When was Grace Hopper born?", "keyword_rerank", {"k": 2}, policy=AnswerPolicy(0.0))
    assert (lenient.answer.text, lenient.answer.refused) == ("1906", False)


def test_cli_methods_lists_plugins_with_their_source_and_problems_on_stderr(plugin_home, capsys):
    path = add_example(plugin_home)
    broken = write_plugin(plugin_home, "broken.py", "oops\n")
    assert main(["methods"]) == 2
    out, err = capsys.readouterr()
    assert f"keyword_rerank   Keyword re-rank ({path})" in out and "-p pool=20 k=4" in out
    assert "vanilla          Vanilla RAG (built-in)" in out
    assert err == f"error: Plugin {broken} was not loaded: NameError: name 'oops' is not defined (line 1)\n"


def test_cli_methods_exits_0_when_every_plugin_loads(plugin_home, capsys):
    add_example(plugin_home)
    assert main(["methods"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("name, code, message", [
    ("syntax.py", method_code(run="yield (("), r"^SyntaxError: .*\(syntax\.py, line 18\)$"),
    ("imports.py", method_code(before="import no_such_package_here"),
     r"^ModuleNotFoundError: No module named 'no_such_package_here' \(line 1\)$"),
    ("clash.py", method_code(id="vanilla"),
     r"^MethodError: method id 'vanilla' is already taken by engine\.methods\.vanilla\.method\.VanillaMethod; "
     r"choose another id \(line 13\)$"),
    ("not_a_method.py", "from engine.methods import register\n\n@register\nclass Mine:\n    id = 'mine'\n",
     r"^MethodError: register expects a subclass of engine\.methods\.Method; got <class "),
    ("no_label.py", method_code(label=""), r"^MethodError: Mine\.label is ''; give a short text"),
    ("bad_id.py", method_code(id="My Method"), r"^MethodError: Mine\.id is 'My Method'; give 1-40 lower-case"),
    ("no_run.py", method_code(run="pass").replace("    def run(self, question, ctx):\n        pass\n", ""),
     r"^MethodError: Mine does not define run\(self, question, ctx\)"),
    ("mutable.py", method_code().replace("@dataclass(frozen=True)", "@dataclass"),
     r"^MethodError: Mine\.Params is <class .*Params'>; give a @dataclass\(frozen=True\) class"),
    ("list_param.py", method_code(params="words: tuple = ('a',)"),
     r"^MethodError: Mine\.Params\.words has default \('a',\); give every field a default of type bool, int"),
    ("out_of_bounds.py", method_code(params="n: int = param(30, min=1, max=9, help='n')"),
     r"^MethodError: Mine\.Params default: parameter n=30 outside \[1, 9\]"),
    ("exits.py", "import sys\nsys.exit(3)\n", r"^SystemExit: 3 \(line 2\)$"),
    ("policy.py", method_code(params="min_confidence: float = param(0.5, min=0.0, max=1.0, help='m')"),
     r"^MethodError: Mine\.Params\.min_confidence is the run's answer policy \(engine\.params\.AnswerPolicy\)"),
])
def test_a_broken_plugin_is_reported_and_left_out_while_the_rest_load(plugin_home, name, code, message):
    path = write_plugin(plugin_home, name, code)
    add_example(plugin_home)
    assert method_ids() == (*BUILT_INS, "keyword_rerank")
    [problem] = load_plugins().problems
    assert problem.source == str(path)
    assert re.search(message, problem.message), problem.message
    assert str(problem) == f"Plugin {path} was not loaded: {problem.message}"
    assert f"ragscope_user_methods.{path.stem}" not in sys.modules
    assert get_method("vanilla").id == "vanilla"


def test_a_plugin_that_fails_after_registering_leaves_nothing_registered(plugin_home):
    write_plugin(plugin_home, "half.py", method_code(id="first", after="raise RuntimeError('second one broke')"))
    assert method_ids() == BUILT_INS
    assert load_plugins().problems == (PluginProblem(str(plugin_home / "methods" / "half.py"),
                                                     "RuntimeError: second one broke (line 19)"),)


def test_a_plugin_that_registers_nothing_is_reported(plugin_home):
    write_plugin(plugin_home, "nothing.py", "x = 1\n")
    assert method_ids() == BUILT_INS
    assert [p.message for p in load_plugins().problems] == [
        "it registers no method; decorate its Method subclass with @register (from engine.methods import register)"]


def test_a_second_plugin_may_not_take_the_first_ones_id(plugin_home):
    write_plugin(plugin_home, "a.py", method_code(id="mine"))
    write_plugin(plugin_home, "b.py", method_code(id="mine"))
    assert method_ids() == (*BUILT_INS, "mine")
    assert load_plugins().source_of("mine").endswith("a.py")
    [problem] = load_plugins().problems
    assert problem.source.endswith("b.py") and "already taken by ragscope_user_methods.a.Mine" in problem.message


def test_plugins_load_once_per_process_even_when_many_threads_list_methods_at_once(plugin_home, tmp_path):
    imports = tmp_path / "imports.txt"  # the pid of each process that imported it: the probe's child, then this one
    write_plugin(plugin_home, "counted.py", method_code(
        before=f"import os\nopen({str(imports)!r}, 'a').write(f'{{os.getpid()}}\\n')"))
    seen: list[tuple[str, ...]] = []
    threads = [threading.Thread(target=lambda: seen.append(method_ids())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    get_method("mine")
    assert imports.read_text().split().count(str(os.getpid())) == 1
    assert seen == [(*BUILT_INS, "mine")] * 8


def test_a_plugin_may_list_methods_while_it_loads(plugin_home):
    write_plugin(plugin_home, "lister.py", method_code(
        before="from engine.methods import get_method, method_ids\nSEEN = method_ids()\nget_method('vanilla')"))
    assert method_ids() == (*BUILT_INS, "mine")
    assert sys.modules["ragscope_user_methods.lister"].SEEN == BUILT_INS


def test_names_starting_with_underscore_or_dot_are_skipped(plugin_home):
    write_plugin(plugin_home, "_helper.py", "raise RuntimeError('not a plugin')\n")
    write_plugin(plugin_home, ".#mine.py", "raise RuntimeError('an editor lock file')\n")
    assert method_ids() == BUILT_INS and load_plugins().problems == ()


def test_links_are_followed_inside_the_folder_only(plugin_home, tmp_path):
    outside = tmp_path / "elsewhere.py"
    outside.write_text(method_code(id="outside"), encoding="utf-8")
    (plugin_home / "methods" / "outside.py").symlink_to(outside)
    write_plugin(plugin_home, "_real.py", method_code(id="inside"))
    (plugin_home / "methods" / "inside.py").symlink_to(plugin_home / "methods" / "_real.py")
    os.mkfifo(plugin_home / "methods" / "pipe.py")  # importing it would wait forever
    assert method_ids() == (*BUILT_INS, "inside")
    assert [(p.source.rsplit("/", 1)[1], p.message) for p in load_plugins().problems] == [
        ("outside.py", f"it links to {outside}, outside {plugin_home / 'methods'}; copy the file into that folder "
                       "instead"),
        ("pipe.py", "it is not a regular file")]


def test_no_methods_folder_means_no_plugins(plugin_home):
    (plugin_home / "methods").rmdir()
    assert method_ids() == BUILT_INS and load_plugins() == plugins.Plugins()


def test_an_installed_packages_entry_point_registers_its_method(plugin_home, tmp_path, monkeypatch):
    site = tmp_path / "site"
    info = site / "myplug-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myplug\nVersion: 0.1\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[ragscope.methods]\nmyplug = myplug_methods\n", encoding="utf-8")
    (site / "myplug_methods.py").write_text(method_code(id="myplug"), encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "myplug_methods", raising=False)
    add_example(plugin_home)
    assert method_ids() == (*BUILT_INS, "keyword_rerank", "myplug")  # files first, then entry points
    assert load_plugins().source_of("myplug") == "entry point myplug = myplug_methods (myplug 0.1)"


def test_a_plugin_failing_during_a_run_ends_with_an_error_step_like_a_built_in(plugin_home, capsys):
    write_plugin(plugin_home, "fails.py", method_code(run="yield from ()\n        1 / 0"))
    assert ask("--method", "mine", "When was Grace Hopper born?") == 2
    out, err = capsys.readouterr()
    assert "[0] error         Run failed" in out and "ZeroDivisionError: division by zero" in out
    assert "[0] answer        Refused: the run failed" in out
    assert err == "error: the run failed: ZeroDivisionError: division by zero\n"


def test_a_plugin_whose_constructor_fails_is_a_clear_error_not_a_crash(plugin_home, capsys):
    write_plugin(plugin_home, "ctor.py", method_code(run="yield from ()\n    def __init__(self):\n        {}['x']"))
    with pytest.raises(RagscopeError, match=r"^method 'mine' could not be created: KeyError: 'x'$"):
        get_method("mine")
    assert ask("--method", "mine", "When was Grace Hopper born?") == 2
    assert "error: method 'mine' could not be created: KeyError: 'x'" in capsys.readouterr().err


def test_an_unknown_method_says_that_some_plugins_did_not_load(plugin_home):
    write_plugin(plugin_home, "broken.py", "oops\n")
    with pytest.raises(UnknownNameError, match=r"unknown method 'broken'; known: .*vanilla; 1 plugin\(s\) did not "
                                               r"load, `python -m engine methods` says why$"):
        get_method("broken")


def test_listing_methods_with_the_example_plugin_does_not_import_torch(tmp_path):
    (tmp_path / "methods").mkdir()
    add_example(tmp_path)
    code = ("import sys\nfrom engine.methods import method_ids\nassert 'keyword_rerank' in method_ids()\n"
            "heavy = [m for m in ('torch', 'transformers', 'chromadb') if m in sys.modules]\n"
            "print(heavy); sys.exit(1 if heavy else 0)")
    env = {**os.environ, "RAGSCOPE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]


def test_a_plugin_folder_loads_as_a_package_whose_modules_import_each_other(plugin_home):
    folder = plugin_home / "methods" / "mine"
    folder.mkdir()
    (folder / "tools.py").write_text("ANSWER = '42'\n", encoding="utf-8")
    (folder / "method.py").write_text(method_code(before="from .tools import ANSWER",
                                                  run="yield AnswerStep(iteration=1, text=ANSWER)"), encoding="utf-8")
    (folder / "__init__.py").write_text("from .method import Mine\n", encoding="utf-8")
    (plugin_home / "methods" / "broken").mkdir()
    (plugin_home / "methods" / "broken" / "__init__.py").write_text("from .method import X\n", encoding="utf-8")
    (plugin_home / "methods" / "broken" / "method.py").write_text("X = 1\nraise RuntimeError('no')\n",
                                                                  encoding="utf-8")
    (plugin_home / "methods" / "notes").mkdir()  # a folder without __init__.py is no plugin
    assert method_ids() == (*BUILT_INS, "mine")
    assert load_plugins().source_of("mine") == str(folder)
    [problem] = load_plugins().problems
    assert problem.message == "RuntimeError: no (method.py line 2)"
    assert not [m for m in sys.modules if m.startswith("ragscope_user_methods.broken")]


def test_the_readme_shows_the_example_plugin_exactly_as_the_tests_load_it():
    example = (ROOT / "examples" / "methods" / "keyword_rerank" / "method.py").read_text()
    readme = (ROOT / "README.md").read_text()
    assert f"```python\n{example}```" in readme
