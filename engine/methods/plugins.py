"""Users' own methods: files and folders in `$RAGSCOPE_HOME/methods/`, `ragscope.methods` entry points; loaded once.

A plugin is one `name.py` file, or a `name/` folder shaped like a built-in method's (`__init__.py` importing
`method.py`, with `tools.py`, `llm.py`, `offline.py`, `prompts/` as it needs them; the README's example),
imported as the package `ragscope_user_methods.name` so its modules import each other relatively.

A plugin registers its methods when it is imported (`@register`), as a built-in does. Each is first imported in a
child process (engine.plugin_probe, issue 26): one that hangs, exits, is killed or fails there is never imported
here, so it cannot stop the built-ins or leave a monkeypatch behind. A plugin that fails — it raises, takes an id
already in use, breaks the Method contract, registers nothing, outlasts its time limit — is left out whole (what
it registered is removed again) and reported as a `PluginProblem`; the others load. Loading waits until methods
are first listed, so importing the engine stays fast.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from importlib.machinery import ModuleSpec
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from engine.methods.base import METHODS
from engine.plugin_probe import Candidate, LoadProblem, exception_text, probe
from engine.settings import Settings

ENTRY_POINT_GROUP = "ragscope.methods"
MODULE_PREFIX = "ragscope_user_methods"  # plugins are imported as ragscope_user_methods.<file stem or folder name>
PROBE = f"{__name__}:probe_candidate"

log = logging.getLogger(__name__)


class PluginProblem(LoadProblem):
    """A plugin that was left out: where it is, and why (the exception, with its line in a plugin file)."""

    what = "Plugin"


@dataclass(frozen=True)
class Plugins:
    """What loading found: the methods plugins added, as (method id, source), and the plugins left out."""

    sources: tuple[tuple[str, str], ...] = ()
    problems: tuple[PluginProblem, ...] = ()

    def source_of(self, method_id: str) -> str:
        return dict(self.sources).get(method_id, "built-in")


_lock = threading.RLock()  # re-entrant: a plugin may list methods while it is being imported
_loaded: Plugins | None = None
_loading = False


def load_plugins() -> Plugins:
    """Load every plugin on the first call; later calls, from any thread, get that same result."""
    global _loaded, _loading
    if _loaded is not None:
        return _loaded
    with _lock:
        if _loaded is None and not _loading:
            _loading = True
            try:
                _loaded = load_from(Settings().methods)
            finally:
                _loading = False
        return _loaded or Plugins()  # a plugin listing methods as it loads sees the built-ins


def load_from(folder: Path) -> Plugins:
    """Import the plugin files in `folder` (by name), then the installed entry points (by name); each only once a
    child process imported it cleanly."""
    sources: list[tuple[str, str]] = []
    problems: list[PluginProblem] = []
    found = [*_plugin_files(folder), *_entry_points()]
    verdicts = probe(PROBE, [c for c in found if isinstance(c, Candidate)])
    for candidate in found:
        if isinstance(candidate, PluginProblem) or verdicts[candidate] is not None:
            problems.append(candidate if isinstance(candidate, PluginProblem) else
                            PluginProblem(candidate.source, verdicts[candidate]))
            continue
        added, problem = _load_one(candidate.source, *_loader(candidate))
        sources += [(method_id, candidate.source) for method_id in added]
        problems += [problem] if problem else []
    return Plugins(tuple(sources), tuple(problems))


def probe_candidate(candidate: Candidate) -> str | None:
    """In the probe's child: load the candidate as `load_from` does; why it is left out, or None."""
    load, file = _loader(candidate)
    try:
        _, problem = _load_one(candidate.source, load, file)
    except BaseException as exc:  # noqa: BLE001 - the child's: a plugin's KeyboardInterrupt is its verdict
        return _describe(exc, file)
    return problem.message if problem else None


def _loader(candidate: Candidate) -> tuple[Callable[[], object], str | None]:
    """What imports the candidate, and its file or folder for locating errors (None for an entry point)."""
    if candidate.kind == "entry":
        return EntryPoint(candidate.name, candidate.target, ENTRY_POINT_GROUP).load, None
    importer = _import_package if candidate.kind == "package" else _import_file
    return partial(importer, Path(candidate.target)), candidate.target


def _load_one(source: str, load: Callable[[], object],
              file: str | None) -> tuple[tuple[str, ...], PluginProblem | None]:
    """Run `load`; on any failure put the registry back as it was, so nothing is half registered."""
    before = dict(METHODS)
    try:
        load()
    except (Exception, SystemExit) as exc:  # SystemExit: a plugin's sys.exit() must not end the app
        METHODS.clear()
        METHODS.update(before)
        log.debug("plugin %s was not loaded", source, exc_info=True)
        return (), PluginProblem(source, _describe(exc, file))
    added = tuple(method_id for method_id in METHODS if method_id not in before)
    if not added:
        return (), PluginProblem(source, "it registers no method; decorate its Method subclass with "
                                         "@register (from engine.methods import register)")
    return added, None


def _plugin_files(folder: Path) -> Iterator[Candidate | PluginProblem]:
    """The folder's `*.py` files and plugin folders (those with an `__init__.py`), sorted by name; names
    starting with _ or . are skipped (helpers, editor files, __pycache__)."""
    if not folder.is_dir():
        return
    root = folder.resolve()
    for path in sorted(folder.iterdir()):
        package = path.is_dir() and (path / "__init__.py").is_file()
        if path.name.startswith(("_", ".")) or not (package or path.suffix == ".py"):
            continue
        source, target = _shown(path), path.resolve()
        if not target.is_relative_to(root):
            what = "folder" if package else "file"
            yield PluginProblem(source, f"it links to {target}, outside {_shown(folder)}; copy the {what} into "
                                        "that folder instead")
        elif package:
            yield Candidate(source, "package", str(path))
        elif not target.is_file():  # a folder, a FIFO (which would hang the import), a broken link
            yield PluginProblem(source, "it is not a regular file")
        else:
            yield Candidate(source, "file", str(path))


def _import_file(path: Path) -> None:
    name = f"{MODULE_PREFIX}.{path.stem}"
    _import(name, importlib.util.spec_from_file_location(name, path))


def _import_package(path: Path) -> None:
    name = f"{MODULE_PREFIX}.{path.name}"
    _import(name, importlib.util.spec_from_file_location(name, path / "__init__.py",
                                                         submodule_search_locations=[str(path)]))


def _import(name: str, spec: ModuleSpec) -> None:
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look a class's module up by name; a package's modules its parent
    try:
        spec.loader.exec_module(module)
    except BaseException:
        for loaded in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
            del sys.modules[loaded]
        raise


def _entry_points() -> Iterator[Candidate]:
    """Installed packages' `ragscope.methods` entry points; loading one imports (and so registers) it."""
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: (p.name, p.value)):
        dist = f" ({point.dist.name} {point.dist.version})" if point.dist else ""
        yield Candidate(f"entry point {point.name} = {point.value}{dist}", "entry", point.value, point.name)


def _describe(exc: BaseException, origin: str | None) -> str:
    """`Type: message`, plus the plugin's line it came from: `(line n)` in a plugin file, `(method.py line n)`
    in a plugin folder (a SyntaxError names its own)."""
    text = exception_text(exc)
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__)
              if origin and (frame.filename == origin or frame.filename.startswith(f"{origin}/"))]
    if frames and not isinstance(exc, SyntaxError):
        where = frames[-1].filename.removeprefix(f"{origin}/")
        text += f" (line {frames[-1].lineno})" if where == origin else f" ({where} line {frames[-1].lineno})"
    return text


def _shown(path: Path) -> str:
    """Paths under the user's home as ~/…, as people write them."""
    try:
        return f"~/{path.relative_to(Path.home())}"
    except ValueError:
        return str(path)
