"""The answering modes, defined once (imports nothing: ``kgqa --help`` stays instant).

- ``kgrag``  the paper's full system: decomposition, candidates, top-K per sub-question
- ``kaping`` LLM+KG: candidates and top-K for the whole question, no decomposition
- ``qd``     LLM+QD: decomposition, sub-questions answered closed-book
- ``llm``    the question alone
- ``graph``  graph-constrained: steps in the KB's vocabulary under a grammar, answers are the
             entities the graph reaches
"""

from __future__ import annotations

# Every mode, in the order tables and charts list them.
MODES = ("kgrag", "kaping", "qd", "llm", "graph")
# The paper's modes (one pipeline class, kgqa.pipeline.pipeline.KGRAGPipeline).
PAPER_MODES = ("kgrag", "kaping", "qd", "llm")
# Modes that retrieve candidate triples around the topic entities (and top-K among them).
RETRIEVING = ("kgrag", "kaping")
# Modes that read the graph to answer (a retrieval ceiling can be measured for them).
GRAPH_READING = ("kgrag", "kaping", "graph")
# Modes that answer from the LLM alone: a question for them may name no entity.
CLOSED_BOOK = ("qd", "llm")
# Modes whose prompts carry the KB profile's decomposition examples.
DECOMPOSING = ("kgrag", "qd")
