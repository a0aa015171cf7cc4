"""Bounded JSON decoding of untrusted text (issue 26, item 3): one error type, and linear work on every input."""

from __future__ import annotations

import random
import re
import sys

import pytest

import engine.codec
from engine.codec import MAX_INT_DIGITS, loads_bounded
from engine.errors import PackError

# Families of hostile text, each a function of a size n.
FAMILIES = {
    "digits then a letter": lambda n: "1" * n + "x",
    "digits then a dot": lambda n: "1" * n + ".",
    "digits then an e": lambda n: "-" + "1" * n + "e",
    "digits in a list then a letter": lambda n: "[" + "9" * n + "x]",
    "escaped quotes": lambda n: '\\"' * n,
    "escaped quotes in an open string": lambda n: '"' + '\\"' * n,
    "escaped quotes in a closed string": lambda n: '["' + '\\"' * n + '"]',
    "escaped backslashes in an open string": lambda n: '"' + "\\\\" * n,
    "open strings in a list": lambda n: "[" + '"\\"' * n,
    "brackets": lambda n: "[]" * n,
    "minus signs": lambda n: "-" * n,
    "unicode escapes": lambda n: '"' + "\\u0041" * n,
    "mixed tokens": lambda n: "".join(random.Random(n).choice(('"a\\"', "[", "]", "12", "-", "{", ":", ",", "\\"))
                                      for _ in range(n)),
}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("n", [MAX_INT_DIGITS + 1, 4_301, 20_000])
def test_hostile_text_gives_a_value_or_a_pack_error_naming_the_label_and_line(family, n):
    text = "\n" + FAMILIES[family](n)  # the problem sits on the record's second line
    try:
        loads_bounded(text, "export.json", first_line=10)
    except PackError as exc:  # anything else escaping fails the test
        assert all(re.match(r"export\.json:1[01]: \S", p) for p in exc.problems), exc.problems


@pytest.mark.parametrize("tail", ["x", ".", "e", "e+", "]", " "])
def test_an_over_long_integer_is_refused_whatever_follows_it(tail):
    with pytest.raises(PackError, match=r"^x:1: integer with 5000 digits; at most 18 are allowed"):
        loads_bounded("1" * 5_000 + tail, "x")


@pytest.mark.parametrize("text", ["1" * 5_000 + ".5", "0." + "1" * 5_000, "1" * 5_000 + "e3", "1e" + "9" * 5_000])
def test_long_fractions_and_exponents_are_floats_not_integers(text):
    assert isinstance(loads_bounded(text, "x"), float)


def test_every_decoder_value_error_is_a_pack_error():
    """A ValueError the pre-scan lets through (here made possible by allowing more digits than int() parses)
    still reaches callers as the one error type they catch."""
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        with pytest.MonkeyPatch.context() as patched:
            patched.setattr(engine.codec, "MAX_INT_DIGITS", 10_000)
            with pytest.raises(PackError, match=r"^x:3: not valid JSON \(Exceeds the limit"):
                loads_bounded("[" + "1" * 700 + "]", "x", first_line=3)
    finally:
        sys.set_int_max_str_digits(limit)


class ReadCounter:
    """Wraps a compiled pattern and charges each call the characters it may have read.

    The charge is the measure of the linear-time test below; it is an upper bound (up to a constant) for the
    patterns the scanner uses and catches the quadratic scan of issue 26: an anchored `match` that succeeds
    is charged its length plus one (a possessive pattern reads at most a character or two past its match and
    never backtracks); one that fails is charged the rest of the text, the most it could have read. `search`
    and `finditer` are charged as the regex engine runs them: an anchored match tried at each position in
    turn. This morning's scanner ran `finditer` with a string pattern that, from every quote of
    `\\"\\"\\"…`, read to the end of the text before failing; under this measure that costs n²/2, as it
    did in time (20 KB 2.9 s, 80 KB 37 s).
    """

    def __init__(self, pattern: re.Pattern[str]):
        self.pattern, self.reads = pattern, 0

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        found = self.pattern.match(text, pos, endpos)
        self.reads += found.end() - pos + 1 if found else min(endpos, len(text)) - pos
        return found

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        for start in range(pos, min(endpos, len(text)) + 1):
            found = self.match(text, start, endpos)
            if found:
                return found
        return None

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize):
        while (found := self.search(text, pos, endpos)) is not None:
            yield found
            pos = found.end() if found.end() > found.start() else found.end() + 1

    def __getattr__(self, name: str):
        return getattr(self.pattern, name)


def _reads(monkeypatch: pytest.MonkeyPatch, text: str) -> int:
    """Characters the decoder's patterns may have read while `loads_bounded(text)` ran."""
    counters = [ReadCounter(p) for p in vars(engine.codec).values() if isinstance(p, re.Pattern)]
    with monkeypatch.context() as patched:
        for name, value in list(vars(engine.codec).items()):
            counter = next((c for c in counters if c.pattern is value), None)
            if counter is not None:
                patched.setattr(engine.codec, name, counter)
        try:
            loads_bounded(text, "x")
        except PackError:
            pass
    return sum(c.reads for c in counters)


@pytest.mark.parametrize("family", FAMILIES)
def test_the_pre_scan_reads_each_character_a_bounded_number_of_times(monkeypatch, family):
    """Work by operation count, not wall clock: at n and 4n the reads grow fourfold (not sixteenfold, as a
    quadratic scan's do) and stay within a few reads per character."""
    n = 2_000
    small, large = (FAMILIES[family](size) for size in (n, 4 * n))
    small_reads, large_reads = _reads(monkeypatch, small), _reads(monkeypatch, large)
    assert large_reads <= 3 * len(large) + 10, f"{large_reads:,} reads for {len(large):,} characters"
    assert large_reads <= 4.5 * small_reads, f"{small_reads:,} reads at n, {large_reads:,} at 4n"


def test_the_measure_catches_a_scan_that_rereads_the_rest_of_the_text():
    """The old string pattern, run as the old scanner ran it, is quadratic under ReadCounter: the test above
    can fail."""
    old_string = ReadCounter(re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"'))
    for size in (500, 2_000):
        list(old_string.finditer('\\"' * size))
        if size == 500:
            small, old_string.reads = old_string.reads, 0
    assert old_string.reads > 12 * small
