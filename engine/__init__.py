"""ragscope engine: packs, retrieval, methods and tools. UI-free; heavy libraries load lazily."""

from engine.settings import offline_environment

offline_environment()
