"""An answer-type-aware extractive reader that needs no language model: the offline `Reader`.

It splits evidence into sentences, scores them against the question (MiniLM cosine + content-word
overlap + retrieval rank), pulls typed candidates out of the best ones (years and dates, numbers,
named spans), and answers with the candidate whose supporting sentences weigh most. Comparisons
("A or B"), year differences and yes/no questions have small dedicated paths; arithmetic goes
through the safe calculator and is recorded as a `calculation` step.

Modules, each leaning only on those above it: `lexicon` and `records` (words, dataclasses),
`names` (gazetteer, capitalised spans), `sentences` (splitting, stems, overlap), `context` (one
read's state), `candidates` (typed candidates and their tally), `mentions` (a name's sentences,
years and numbers), the answer paths `extractive`, `count`, `choice`, `difference`, `yes_no`,
`hops`, and `reader` (the `OfflineReader` that dispatches between them).
"""

from engine.tools.offline_reader.hops import Hop, question_hop
from engine.tools.offline_reader.names import Gazetteer
from engine.tools.offline_reader.reader import OfflineReader
from engine.tools.offline_reader.sentences import fact_sentence

__all__ = ["Gazetteer", "Hop", "OfflineReader", "fact_sentence", "question_hop"]
