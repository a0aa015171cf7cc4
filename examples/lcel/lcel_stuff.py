"""An LCEL chain as a ragscope method: the pack's retriever | a prompt | the chosen chat model | a parser."""
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnablePassthrough

from engine.lcel import LcelTools, lcel_method

PROMPT = ChatPromptTemplate.from_messages([
    ("system", "Answer the question from the context in a few words."),
    ("human", "Context:\n{context}\n\nQuestion: {question}"),
])


def build(tools: LcelTools) -> Runnable:
    """Called once a run: the pack's retriever and the backend's chat model, as LangChain objects."""
    context = tools.retriever | (lambda docs: "\n\n".join(doc.page_content for doc in docs))
    return {"context": context, "question": RunnablePassthrough()} | PROMPT | tools.chat_model | StrOutputParser()


lcel_method("lcel_stuff", "LCEL stuff chain", build,
            description="A LangChain LCEL chain: retrieve, stuff the chunks into a prompt, ask the chat model.")
