"""Model backends: each builds the tool bundle a run uses (offline, hf, openai-compatible, langchain)."""
