"""A LangChain vector store over the pack's chunks as a ragscope retriever: copy to ~/.ragscope/retrievers/."""

from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore

from engine.retrieval.user import RetrieverInputs


def make_retriever(inputs: RetrieverInputs) -> BaseRetriever:
    # the pack's chunks, embedded by ragscope's encoder; their ids map the hits back to the pack
    store = InMemoryVectorStore.from_documents(inputs.documents(), inputs.embeddings())
    return store.as_retriever(search_kwargs={"k": 20})  # ragscope keeps each method's first k
