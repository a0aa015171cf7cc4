"""Every exception the engine raises on purpose, so callers can catch one family."""

from __future__ import annotations


class RagscopeError(Exception):
    """Base of all deliberate engine errors; the message is meant for the user."""


class PackError(RagscopeError):
    """A knowledge pack (or an upload to build one) is malformed.

    `problems` holds every `file:line: problem` found, so a user can fix them all at once.
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        shown = problems[:20]
        more = f"\n… and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__("\n".join(shown) + more)


class IngestError(RagscopeError):
    """A file handed to ingestion cannot be turned into documents or triples."""


class QuestionError(RagscopeError):
    """A question is empty, too long or otherwise not askable."""


class CalculationError(RagscopeError):
    """An expression is not plain arithmetic, too large, or cannot be evaluated."""


class UnknownNameError(RagscopeError):
    """A registry (methods, backends, retrievers) was asked for a name it does not hold."""


class BackendError(RagscopeError):
    """A model backend failed to load or to answer."""


class RunCancelled(RagscopeError):
    """The user stopped a run; the steps yielded so far are kept."""
