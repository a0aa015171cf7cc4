"""Your vector store fused with ragscope's BM25 by LangChain's EnsembleRetriever (weighted reciprocal rank)."""

from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from engine.retrieval.user import RetrieverInputs


def make_retriever(inputs: RetrieverInputs) -> BaseRetriever:
    store = InMemoryVectorStore.from_documents(inputs.documents(), inputs.embeddings())
    dense = store.as_retriever(search_kwargs={"k": 20})
    return EnsembleRetriever(retrievers=[dense, inputs.builtin("bm25", k=20)], weights=[0.5, 0.5])
