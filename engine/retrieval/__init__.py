"""Retrieval: the MiniLM embedder, a persistent Chroma index, BM25 and RRF fusion as LangChain retrievers."""
