"""R2AG (Ye et al., 2024): retrieval features → R2-Former → vectors injected into the LLM's prompt.

Spec: shared/methods/r2ag.md. Modules: `method` (the run, and which way it answers), `tools` (what the two ways
share), `llm` (injected generation), `offline` (the reader over the re-ranked chunks where nothing can be
injected), `features` (r, γ, ζ), `former` (the torch R2-Former),
`checkpoint` (what a trained R2-Former was trained for), `prompt` (retrieval-aware prompt with
tracked placeholder slots), `injection` (inputs_embeds generation and attention capture),
`answer` (the first line of the output, never the prompt echoed), `views` (attention steps),
`training` (relevance-only and joint training), `lm_inputs` (the frozen LLM's side of joint training,
prepared once). `former`, `injection`, `training` and `lm_inputs` import torch; the method imports
them only when it runs.
"""

from engine.methods.r2ag.method import R2agMethod

__all__ = ["R2agMethod"]
