"""Every exception the engine raises on purpose, so callers can catch one family."""

from __future__ import annotations


class RagscopeError(Exception):
    """Base of all deliberate engine errors; the message is meant for the user."""


class PackError(RagscopeError):
    """A knowledge pack (or an upload to build one) is malformed.

    `problems` holds every `file:line: problem` found, so a user can fix them all at once.
    """

    MAX_SHOWN = 30

    def __init__(self, problems: list[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        more = len(self.problems) - self.MAX_SHOWN
        tail = f"\n… and {more} more" if more > 0 else ""
        super().__init__("\n".join(self.problems[: self.MAX_SHOWN]) + tail)


class IngestError(PackError):
    """Files handed to ingestion (or a dataset to import) cannot be turned into a pack."""


class QuestionError(RagscopeError):
    """A question is empty, too long or otherwise not askable."""


class CalculationError(RagscopeError):
    """An expression is not plain arithmetic, too large, or cannot be evaluated."""


class UnknownNameError(RagscopeError):
    """A registry (methods, backends, retrievers) was asked for a name it does not hold."""


class BackendError(RagscopeError):
    """A model backend failed to load or to answer."""


class ServerUnreachable(BackendError):
    """A model server could not be reached (connection refused, unknown host, no answer in time): the run
    stops asking it at the first such failure instead of failing every later call the same way (issue 22)."""


class RunCancelled(RagscopeError):
    """The user stopped a run; the steps yielded so far are kept."""


class MethodError(RagscopeError):
    """A method class (a built-in or a user's plugin) breaks the Method contract; the message says how to fix it."""


class CheckpointError(RagscopeError):
    """A trained model file (e.g. an R2-Former) is missing, unreadable or was trained for another setup."""


class RetrieverError(RagscopeError):
    """A user's own retriever (a file, an entry point or `module:factory`) cannot be loaded or built, or gave back
    something that is not LangChain Documents; the message names where it came from."""


class DiskFull(RagscopeError):
    """A write ran out of disk space (ENOSPC, a quota, or the file size limit: EFBIG) in `folder` (issue 26)."""

    def __init__(self, folder: str, detail: str):
        self.folder = folder
        super().__init__(f"{folder}: out of disk space ({detail}); free some space there and try again")


class RunStoreError(RagscopeError):
    """The run store could not be read or written: another process held it past the time bound, the disk
    is full, the file is read-only or damaged. The message names the store and what to do."""


class EvaluationBusy(RagscopeError):
    """Another process (a second app server on the same home) is asking this evaluation now: one writer per journal."""
