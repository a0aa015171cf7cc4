"""runs.supporting_docs: the gold doc ids Explore marks, only for a question of the pack the run asked it on."""

from __future__ import annotations

from dataclasses import replace

from engine.app import runs
from engine.trace import Trace


def _trace(pack: str, question_id: str) -> Trace:
    return Trace(id="t", question="q?", method="vanilla", backend="offline", model="", pack=pack,
                 question_id=question_id)


def test_a_pack_question_gives_its_supporting_documents(mini_pack):
    question = next(q for q in mini_pack.questions if q.supporting_docs)
    docs = runs.supporting_docs(_trace(mini_pack.info.name, question.id), mini_pack)
    assert docs == frozenset(question.supporting_docs)


def test_a_question_of_the_users_own_an_unknown_id_or_another_packs_run_gives_none(mini_pack):
    question = next(q for q in mini_pack.questions if q.supporting_docs)
    assert runs.supporting_docs(_trace(mini_pack.info.name, ""), mini_pack) == frozenset()
    assert runs.supporting_docs(_trace(mini_pack.info.name, "no-such-id"), mini_pack) == frozenset()
    assert runs.supporting_docs(_trace("another-pack", question.id), mini_pack) == frozenset()


def test_a_pack_question_without_supporting_documents_gives_none(mini_pack):
    question = replace(mini_pack.questions[0], id="bare", supporting_docs=())
    pack = replace(mini_pack, questions=(*mini_pack.questions, question))
    assert runs.supporting_docs(_trace(pack.info.name, "bare"), pack) == frozenset()
