"""Think-on-Graph 2.0 (Ma et al., 2024): KG × text exploration, spec shared/methods/tog2.md.

`method` (the run, and which twins of the tools it gets), `tools` (the interfaces: topic prune, relation
prune, reasoner, query re-formulation), `llm` (their prompted twins and parsers), `offline` (their offline
twins), `exploration` (relation/entity discovery, entity documents, chunk scoring, Eq. 6), `prompts/`.
"""

from engine.methods.tog2.method import Tog2Method

__all__ = ["Tog2Method"]
