"""Plain-language captions for the demo tour: what each kind of step means, for non-engineers."""

STEP_CAPTIONS: dict[str, str] = {
    "rules_matched": "The method looked for general rules (like “people born in a city are usually citizens "
                     "of its country”) that fit the question.",
    "retrieval": "It searched the knowledge pack; these are the passages that came back, best first.",
    "graph_delta": "It added what it learned to a small map of entities and their relations.",
    "decision": "Here the method decided what to do next.",
    "llm_call": "A language model was asked something; open it to see exactly what it read and wrote.",
    "attention": "Where the model looked: brighter cells mean more attention to that passage.",
    "features": "Numbers the method computed about each passage before answering.",
    "attributes": "What kind of question this is, as the method judged it.",
    "calculation": "Arithmetic is done by a safe calculator, not guessed by the model.",
    "answer": "The answer, with the passages it rests on.",
    "error": "Something did not go to plan; the method carried on where it could.",
}
