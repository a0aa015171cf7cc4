"""locate_segments: where the pieces a tool put into its prompt sit in the message as sent."""

from __future__ import annotations

from engine.tools.llm_call import locate_segments

PROMPT = "Evidence:\n[1] Alpha is a town.\n[2] Beta is a river.\n[3] Alpha is a town.\nQuestion: Where is Alpha?"


def spans(segments):
    return [(s.label, s.kind, PROMPT[s.start:s.end]) for s in segments]


def test_pieces_are_found_in_order_with_exact_offsets():
    found = locate_segments(PROMPT, [("doc 1", "doc", "Alpha is a town."), ("doc 2", "doc", "Beta is a river."),
                                     ("question", "question", "Where is Alpha?")])
    assert spans(found) == [("doc 1", "doc", "Alpha is a town."), ("doc 2", "doc", "Beta is a river."),
                            ("question", "question", "Where is Alpha?")]


def test_a_piece_quoted_twice_is_attributed_where_the_prompt_lists_it():
    found = locate_segments(PROMPT, [("doc 2", "doc", "Beta is a river."), ("doc 3", "doc", "Alpha is a town.")])
    assert [s.start for s in found][1] == PROMPT.index("[3]") + 4


def test_pieces_not_in_the_prompt_or_empty_are_left_out():
    found = locate_segments(PROMPT, [("gone", "doc", "Gamma is a hill."), ("blank", "doc", "  "),
                                     ("doc 2", "doc", "  Beta is a river.\n")])
    assert spans(found) == [("doc 2", "doc", "Beta is a river.")]


def test_a_piece_before_the_cursor_is_still_found():
    found = locate_segments(PROMPT, [("doc 2", "doc", "Beta is a river."), ("evidence", "doc", "Evidence:")])
    assert spans(found)[1] == ("evidence", "doc", "Evidence:")


def test_filled_segments_are_looked_for_only_inside_their_own_value():
    from engine.tools.llm_call import fill_with_segments

    template = "Example: Beta is a river.\nInput: {evidence}\nQuestion: {question}"
    prompt, segments = fill_with_segments(
        template, {"evidence": [("doc 2", "doc", "Beta is a river.")], "question": [("question", "question", "Why?")],
                   "absent": [("x", "doc", "Beta")]},
        evidence="[2] Beta is a river.", question="Why?")
    assert prompt == "Example: Beta is a river.\nInput: [2] Beta is a river.\nQuestion: Why?"
    assert [(s.label, s.start) for s in segments] == [("doc 2", prompt.index("[2]") + 4),
                                                      ("question", prompt.index("Why?"))]


def test_a_reply_the_backend_cut_short_says_so_on_its_call_step():
    """Issue 26: the backend's bound (time, tokens, bytes) reaches the trace: the user sees why a reply ends."""
    from dataclasses import replace

    from engine.llm.chat import GenerationSettings, Message
    from engine.tools.llm_call import call_model
    from fake_chat import ScriptedChat

    class CutChat(ScriptedChat):
        def complete(self, messages, settings=GenerationSettings()):
            return replace(super().complete(messages, settings), cut="reply cut after 60 s (the backend's timeout)")

    asked = (Message("user", "Where?"),)
    reply = call_model(CutChat(lambda _p: "Paris is"), asked, GenerationSettings(), role="reader")
    assert reply.text == "Paris is" and reply.steps[0].cut == "reply cut after 60 s (the backend's timeout)"
    whole = call_model(ScriptedChat(lambda _p: "Paris"), asked, GenerationSettings(), role="reader")
    assert whole.steps[0].cut == ""
