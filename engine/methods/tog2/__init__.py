"""Think-on-Graph 2.0 (Ma et al., 2024): KG × text exploration, spec shared/methods/tog2.md.

`method` (the run), `tools` (topic prune, relation prune, reasoner and query re-formulation in LLM
and offline form), `exploration` (relation/entity discovery, entity documents, chunk scoring, Eq. 6),
`prompts/`.
"""

from engine.methods.tog2.method import Tog2Method

__all__ = ["Tog2Method"]
