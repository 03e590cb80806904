"""The faithfulness check (PoSh's mistakes and omissions, with the graph as the rubric):
``FaithfulnessChecker(graph).check(answer, topics, hops, gold_path) -> FaithReport``.

- :mod:`~kgqa.check.base`: ``KBGraph``, what the check reads from the graph
- :mod:`~kgqa.check.claims`: ``Claim``, reading the claims of an answer
- :mod:`~kgqa.check.report`: ``FaithReport`` (printing, metrics, JSON)
- :mod:`~kgqa.check.checker`: ``FaithfulnessChecker``, ``ask_hops``
"""

from kgqa.check.base import KBGraph
from kgqa.check.checker import FaithfulnessChecker, ask_hops
from kgqa.check.claims import STAGE_ANSWER, STAGE_REASONING, Claim, sub_answer_stage
from kgqa.check.report import LISTED_OMISSIONS, FaithReport

__all__ = [
    "LISTED_OMISSIONS",
    "STAGE_ANSWER",
    "STAGE_REASONING",
    "Claim",
    "FaithReport",
    "FaithfulnessChecker",
    "KBGraph",
    "ask_hops",
    "sub_answer_stage",
]
