"""LangChain pipelines as ragscope methods (issue 25): `lcel_method` registers a runnable, whose retriever,
model and tool events become steps (engine/lcel/steps.py) as it runs.

Not imported by `import engine`: a plugin file that uses it pulls in langchain-core's runnables then.
"""

from engine.lcel.method import LcelParams, LcelTools, lcel_method

__all__ = ["LcelParams", "LcelTools", "lcel_method"]
