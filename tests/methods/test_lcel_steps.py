"""The callback handler on its own: any retriever's documents as hits, nested retrievers once, token counts."""

from __future__ import annotations

import pytest
from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.outputs import Generation, LLMResult
from langchain_core.retrievers import BaseRetriever

from engine.errors import RunCancelled
from engine.lcel.steps import StepRecorder, hit_from_document, token_counts, token_logprobs
from engine.trace import RetrievalStep, TokenLogprob


class Notes(BaseRetriever):
    """A user's retriever whose documents carry none of ragscope's metadata."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content="Grace Hopper was born in 1906.", metadata={"source": "notes/hopper.txt"}),
                Document(page_content="Untitled and unsourced.")]


def recorded(runnable, given):
    steps = []
    recorder = StepRecorder(emit=steps.append, check=lambda: None)
    runnable.invoke(given, config={"callbacks": [recorder]})
    return steps, recorder


def test_a_foreign_retrievers_documents_are_hits_with_their_source_or_a_content_hash():
    steps, recorder = recorded(Notes(), "When was Grace Hopper born?")
    (step,) = steps
    assert isinstance(step, RetrievalStep) and step.title == "Retrieved 2 chunks (retriever)"
    first, second = step.hits
    assert (first.doc_id, first.title, first.rank) == ("notes/hopper.txt", "notes/hopper.txt", 1)
    assert first.chunk_id.startswith("chunk-") and first.chunk_id != second.chunk_id
    assert second.doc_id.startswith("doc-") and second.rank == 2 and recorder.hits == list(step.hits)


def test_an_ensemble_of_our_retrievers_is_one_retrieval_step_with_the_fused_hits(mini_workbench):
    retrieval = mini_workbench.retrieval
    ensemble = EnsembleRetriever(retrievers=[retrieval.retriever("bm25", k=3), retrieval.retriever("dense", k=3)],
                                 weights=[0.5, 0.5])
    steps, recorder = recorded(ensemble, "When was Grace Hopper born?")
    (step,) = steps  # its two parts ran as retriever runs of their own
    assert step.hits[0].chunk_id == "m07#0" and len(recorder.hits) == len(step.hits) <= 6


def test_a_long_document_is_cut_when_it_becomes_a_hit():
    hit = hit_from_document(Document(page_content="x" * 10_000, metadata={"doc_id": "d", "score": 0.5}), rank=3)
    assert len(hit.text) < 4_100 and hit.text.endswith("more characters not recorded]") and hit.score == 0.5


def test_token_counts_come_from_usage_metadata_or_the_openai_style_token_usage():
    plain = LLMResult(generations=[[Generation(text="1906")]], llm_output={"token_usage": {"prompt_tokens": 40,
                                                                                           "completion_tokens": 2}})
    assert token_counts(plain) == (40, 2)
    assert token_counts(LLMResult(generations=[[Generation(text="1906")]])) == (0, 0)


def test_stop_raises_from_a_start_event_so_the_pipeline_ends_there():
    def stopped():
        raise RunCancelled("stopped by the user")

    steps = []
    with pytest.raises(RunCancelled):
        Notes().invoke("q", config={"callbacks": [StepRecorder(emit=steps.append, check=stopped)]})
    assert steps == []


def test_logprobs_in_openais_shape_are_read_from_a_generations_info_and_malformed_ones_skipped():
    info = {"logprobs": {"content": [{"token": "19", "logprob": -0.5}, {"token": "06"}, "junk"]}}
    assert token_logprobs(Generation(text="1906", generation_info=info)) == (TokenLogprob("19", -0.5),)
    assert token_logprobs(Generation(text="1906", generation_info={"logprobs": None})) == ()


def test_a_document_whose_retriever_gave_no_score_has_none_not_an_invented_one():
    hit = hit_from_document(Document(page_content="text", metadata={"source": "notes.txt"}), rank=1)
    assert hit.score is None and hit.doc_id == "notes.txt"
