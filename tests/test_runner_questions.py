"""Question validation refuses text that cannot be saved, printed or indexed (issue 15, item 7).

Kept apart from test_runner.py (which needs a warm workbench) because `validate_question` is pure;
fold it in there when convenient.
"""

from __future__ import annotations

import pytest

from engine.errors import QuestionError
from engine.runner import validate_question


@pytest.mark.parametrize("question", [
    "Who was born in \udc80 Warsaw?",  # what Python makes of an invalid UTF-8 byte in argv (surrogateescape)
    "Who \ud800?",  # a lone high surrogate, as a JSON "\\ud800" escape decodes
    "\udfff",
])
def test_a_question_with_a_lone_surrogate_is_refused_with_where_it_is(question):
    with pytest.raises(QuestionError, match=r"lone UTF-16 surrogate \('\\ud[89a-f][0-9a-f]{2}'\) at character \d+"):
        validate_question(question, 2000)


def test_a_question_with_characters_beyond_the_basic_plane_is_accepted():
    assert validate_question("  Who  wrote 😀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢?\n", 2000) == "Who wrote 😀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢?"
