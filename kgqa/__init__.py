"""kgqa: explainable question answering over a Neo4j knowledge graph with a local LLM.

Nothing heavy is imported here: drivers and models are built on first use by
:class:`kgqa.factory.Factory`.
"""

__version__ = "0.1.0"
