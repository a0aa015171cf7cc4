"""Plain-language hints for the words a trace uses (actions, provenance, feature columns), so a
presenter's audience never meets bare jargon such as `depth_cap`, `[SUBQ]` or γ."""

from __future__ import annotations

# a decision's action → what happened, in words
ACTIONS: dict[str, str] = {
    "answer": "The method decided it had enough to answer.",
    "continue": "Not enough yet: the method goes on to another round.",
    "subq": "The planner wrote a new sub-question ([SUBQ]) and searches for it next.",
    "sufficient": "The planner judged the facts gathered so far enough to answer ([SUFFICIENT]).",
    "no_retrieval": "The planner judged the question answerable without searching ([NO_RETRIEVAL]).",
    "cap": "The method reached its maximum number of rounds and answers with what it has.",
    "graph_answer": "The answer was read from the facts the run gathered into its query graph.",
    "chunk_answer": "The query graph gave no confident answer, so the answer was read from the retrieved text.",
    "depth_cap": "The graph walk reached its maximum depth and answers with what it found.",
    "stopped": "Someone pressed Stop; the steps so far are kept.",
    "refuse": "The method would rather say \"I don't know\" than guess.",
    "skip": "This part of the method did not apply to the question and was skipped.",
    "fallback": "The usual path did not work (e.g. no entity was recognised), so a simpler one was taken.",
    "standard_rag": "No rule fitted the question, so plain retrieve-and-read was used.",
    "kg_answer": "The answer was read straight off the knowledge graph.",
    "false_premise": "The question assumes something the knowledge contradicts.",
    "premise_ok": "Nothing in the knowledge contradicts what the question assumes.",
    "no_injection": "No trained R2-Former checkpoint fits this model, so the documents were only re-ranked.",
    "adapter": "A fine-tuned adapter of the model was used for this step.",
    "no_adapter": "No fine-tuned adapter was given; the base model answered.",
    "link": "The question's names were matched to entities of the knowledge pack.",
    "truncate": "The prompt was too long for the model, so document text was cut.",
    # the hybrid method's reasoning routes
    "idk_any_sample": "One of the model's samples said \"I don't know\", and that wins over a guess.",
    "invalid_any_sample": "One of the model's samples called the question's premise false.",
    "parsed": "The model's answer was read from its reply.",
    "premise_flag": "The premise check found the question's assumption false.",
    "summarizer": "The model's long reply was summarised into a short answer.",
    "offline_reader": "Without a model, the extractive reader picked the answer out of the evidence.",
    # the hybrid method's closed-book answer
    "idk": "The model answered \"I don't know\" without the documents.",
    "invalid": "Without the documents, the model called the question's premise false.",
    "parse_fail": "The model's closed-book reply could not be read as an answer.",
}

WHY = ("Why this chunk came back: \"question\" = it matched the question itself; \"rule …\" = it matched the "
       "question together with that rule; \"sub-query N\" = it answered the N-th sub-question; an entity's "
       "name = it belongs to that entity's documents.")

FEATURE_COLUMNS: dict[str, str] = {
    "r": "relevance: how similar the chunk is to the question (cosine of their vectors)",
    "γ": "precedent similarity: how much the chunk repeats the chunks ranked above it",
    "ζ": "neighbour similarity: how much the chunk resembles the chunks ranked next to it",
    "QDM p": "the R2-Former's probability that this chunk helps answer the question",
}

ECE = ("ECE (expected calibration error): how far confidence is from accuracy, over the answered questions; "
       "0 is perfectly calibrated.")

GOLD = ("gold = the chunk comes from one of the pack question's supporting documents: those that hold the facts "
        "the gold answer rests on. Recall@k, MAP, MRR and nDCG@k judge a ranking by where these come.")

METRICS = ("EM = exact match with a gold answer; F1 = word overlap with it; acc = a gold answer appears in "
           "the answer; recall@k = every supporting document is among the first k read; MAP = how high all the "
           "supporting documents rank, on average; MRR = 1 / the rank of the first supporting document (1 = it came "
           "first, 0.5 = second; 0 if none came), averaged over questions; nDCG@k = the supporting documents among "
           "the first k, each counted less the lower it ranks, as a share of the best possible order (1 = all of "
           "them first); crag_score = "
           "(correct − hallucinated) / questions, so an honest \"I don't know\" costs nothing; confidence = "
           "the mean confidence of the answers given; " + ECE)


def action_hint(action: str) -> str | None:
    return ACTIONS.get(action)
