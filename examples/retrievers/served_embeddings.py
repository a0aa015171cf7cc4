"""The pack's chunks embedded by an OpenAI-compatible /v1/embeddings server (vLLM, TEI) on a GPU box, for a pack too
big to embed here: copy to ~/.ragscope/retrievers/ and set RAGSCOPE_EMBEDDINGS_URL (and _MODEL)."""

import os

import openai
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_openai import OpenAIEmbeddings

from engine.retrieval.user import RetrieverInputs


def make_retriever(inputs: RetrieverInputs) -> BaseRetriever:
    embeddings = OpenAIEmbeddings(
        base_url=os.environ.get("RAGSCOPE_EMBEDDINGS_URL", "http://127.0.0.1:8080/v1"),
        model=os.environ.get("RAGSCOPE_EMBEDDINGS_MODEL", "BAAI/bge-small-en-v1.5"),
        api_key="unused",  # a local server wants none; never your OPENAI_API_KEY
        check_embedding_ctx_length=False,  # send the texts: the length check would download tiktoken's encoding
        chunk_size=256,  # texts per request
        http_client=openai.DefaultHttpxClient(follow_redirects=False))  # the texts go to this server only
    store = InMemoryVectorStore.from_documents(inputs.documents(), embeddings)  # or Chroma/Qdrant for millions
    return store.as_retriever(search_kwargs={"k": 20})
