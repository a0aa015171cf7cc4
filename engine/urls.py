"""One check for the http(s) URLs a user points ragscope at (a model server, a Chroma server, a trace
collector): each says what was wrong with it, by the name the user gave it, and an example that works."""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

from engine.errors import RagscopeError


def http_url(url: str, name: str, example: str, error: type[RagscopeError] = RagscopeError) -> SplitResult:
    """`url` split, or `error` naming it: not a URL, a port out of range, not http(s), no host."""
    try:
        parts = urlsplit(url)
        _ = parts.port  # parsed lazily: a port out of range or not a number raises only here
    except ValueError as exc:
        raise error(f"{name} {url!r} is not a URL ({exc}); give one like {example}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise error(f"{name} {url!r} must start with http:// or https:// and name a host, e.g. {example}")
    return parts
