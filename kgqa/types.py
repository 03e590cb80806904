"""The values that flow between stages: small frozen dataclasses, no untyped dicts.

Reading order follows the paper's Figure 2: a question is decomposed into sub-questions,
candidate triples are retrieved around the topic entities, each sub-question picks its
top-K triples and gets a sub-answer, and a synthesis produces the final answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def verbalize_relation(relation: str) -> str:
    """``written_by`` -> ``written by`` (the paper's verbalization of a relation name)."""
    return relation.replace("_", " ")


@dataclass(frozen=True)
class Triple:
    """One fact of the graph. ``id`` is the stable, content-derived triple id."""

    id: int
    subject: str
    relation: str
    object: str

    def verbalize(self) -> str:
        """``(subject, relation, object)`` with ``_`` in the relation turned into spaces.

        The one verbalization used for indexing and for prompts alike.
        """
        return f"({self.subject}, {verbalize_relation(self.relation)}, {self.object})"


@dataclass(frozen=True)
class ScoredTriple:
    triple: Triple
    score: float


@dataclass(frozen=True)
class Edge:
    """A triple seen from the frontier entity it touches."""

    triple: Triple
    from_name: str
    outgoing: bool
    to_node_id: str | None = None

    @property
    def to_name(self) -> str:
        return self.triple.object if self.outgoing else self.triple.subject


@dataclass(frozen=True)
class Candidates:
    """Every triple within ``hops`` of the topic entities, grouped by hop distance."""

    entities: tuple[str, ...]
    hops: int
    by_hop: tuple[tuple[Triple, ...], ...]
    truncated: bool = False
    # Hub nodes that were not expanded through (name, degree), so the cap is never silent.
    skipped_hubs: tuple[tuple[str, int], ...] = ()
    seconds: float = 0.0

    @property
    def triples(self) -> tuple[Triple, ...]:
        return tuple(t for hop in self.by_hop for t in hop)

    @property
    def ids(self) -> list[int]:
        return [t.id for t in self.triples]

    def __len__(self) -> int:
        return sum(len(h) for h in self.by_hop)


@dataclass(frozen=True)
class StageCost:
    """Time and tokens one LLM call (or one stage) cost."""

    stage: str
    seconds: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # True when the LLM stopped at its token limit (llm.max_tokens): the output may be cut.
    cut: bool = False


@dataclass(frozen=True)
class Decomposition:
    question: str
    reasoning: str
    sub_questions: tuple[str, ...]
    raw: str = ""
    # True when the LLM output could not be parsed and the question itself is used.
    fallback: bool = False


@dataclass(frozen=True)
class SubAnswer:
    index: int
    original: str
    reformulated: str
    answer: str
    evidence: tuple[ScoredTriple, ...] = ()
    # Graph mode: the KG entities that answer this sub-question.
    entities: tuple[str, ...] = ()
    # True when the LLM stopped writing ``answer`` at its token limit: it may be cut short.
    cut: bool = False


@dataclass(frozen=True)
class AnswerEntity:
    """A KG entity in the final answer with the triple ids that support it."""

    name: str
    node_id: str | None = None
    score: float = 1.0
    support: tuple[int, ...] = ()


@dataclass(frozen=True)
class Answer:
    question: str
    entities_in: tuple[str, ...]
    mode: str
    text: str
    reasoning: str = ""
    sub_answers: tuple[SubAnswer, ...] = ()
    answer_entities: tuple[AnswerEntity, ...] = ()
    evidence_ids: tuple[int, ...] = ()
    costs: tuple[StageCost, ...] = ()
    candidates_count: int = 0
    truncated: bool = False
    parameters: dict[str, object] = field(default_factory=dict)
    # True when ``answer_entities`` were read from the LLM's free text (kgqa.pipeline.ground)
    # rather than reached in the graph: evaluation then reads the text, as for any free answer.
    from_text: bool = False

    @property
    def cut_stages(self) -> tuple[str, ...]:
        """The stages whose LLM output stopped at the token limit (each once, in order)."""
        return tuple(dict.fromkeys(c.stage for c in self.costs if c.cut))

    @property
    def ranked_entities(self) -> tuple[AnswerEntity, ...]:
        """The answer entities when they *are* the answer (graph mode), else ()."""
        return () if self.from_text else self.answer_entities
