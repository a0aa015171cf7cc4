"""Calibrated confidence for offline answers, and the refusal below `min_confidence` (issue 17).

Every offline tool scores its answer its own way (the reader's sentence relevance × candidate margin,
the KG lookups' fixed 0.9, a rule walk's path count), so a raw 0.9 from one method and from another
mean different things, and none of them is a probability. A logistic model maps the raw score and a few
features any question and answer have (what the question asks for, whether the answer has that shape,
how much of the answer the question already says, how long the question is, the method) to the
probability that the answer is right. It is fitted by `scripts/fit_calibration.py` on evaluation runs
and shipped as `model.json` beside this file; the fit's packs and figures are in that file.

Only offline answers are calibrated: a language model's confidence is the server's or the reader's own
and the model was never fitted to it.
"""

from engine.calibration.features import FEATURES, Derived, answer_features
from engine.calibration.model import (
                                      CalibrationModel,
                                      default_model,
                                      derivations,
                                      graph_facts,
                                      retrieved_documents,
                                      settle,
)

__all__ = ["FEATURES", "CalibrationModel", "Derived", "answer_features", "default_model", "derivations", "graph_facts",
           "retrieved_documents", "settle"]
