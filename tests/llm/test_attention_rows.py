"""Which generated token the "first answer token" heatmap shows (issue 22: never the reply's own label)."""

from __future__ import annotations

import pytest

from engine.llm.attention import first_answer_index


@pytest.mark.parametrize(("pieces", "expected"), [
    (["Answer", ":", " Bristol", ","], 2),         # the label the reader's prompt asks for is skipped
    (["Answer:", " ", "1", "9", "0", "2"], 2),      # and the blank after it
    (["Bristol", " ,", " England"], 0),             # no label: the first token is the answer's
    ([" ", "\n", "Paris"], 2),                       # leading blanks are not the answer
    (["Final answer", ":", " \"", "Warsaw"], 3),    # nor quotes
    (["Answer", ":"], 0),                            # nothing after the label: the first token, not an error
    ([], 0),
])
def test_the_answer_starts_past_the_replys_label_and_blanks(pieces, expected):
    assert first_answer_index(pieces) == expected
