"""The API's documents as pydantic models: the request bodies, and the answer document
(:meth:`kgqa.service.AskResult.to_json`) written down once. ``kgqa ask --json`` prints it and
``POST /v1/ask`` returns it; the tests validate both against :class:`AnswerDocument` (unknown
fields forbidden, so the model cannot fall behind the document)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from kgqa.modes import MODES

MAX_QUESTION_CHARS = 2000
MAX_NAME_CHARS = 500
MAX_ENTITIES = 8


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AskRequest(_Strict):
    """``POST /v1/ask``: what ``kgqa ask`` takes."""

    question: str = Field(
        min_length=1,
        max_length=MAX_QUESTION_CHARS,
        description="The question; [Brackets] name its topic entity.",
    )
    entity: str | None = Field(
        None, min_length=1, max_length=MAX_NAME_CHARS, description="A topic entity."
    )
    entities: list[str] = Field(
        default_factory=list, max_length=MAX_ENTITIES, description="Topic entities."
    )
    mode: str = Field("graph", description=f"One of: {', '.join(MODES)}.")
    hops: int | None = Field(None, ge=1, le=3, description="Candidate radius N.")
    top_k: int | None = Field(None, ge=1, le=1000, description="Triples per sub-question K.")
    check: bool = Field(False, description="Run the faithfulness check.")
    save: bool = Field(False, description="Keep the run in Neo4j (never served from the cache).")
    cache: bool = Field(True, description="Use the answer cache (false: answer afresh).")

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("entities")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name.strip() or len(name) > MAX_NAME_CHARS:
                raise ValueError(f"each entity must be 1 to {MAX_NAME_CHARS} characters")
        return value

    @field_validator("mode")
    @classmethod
    def _mode(cls, value: str) -> str:
        if value not in MODES:
            raise ValueError(f"must be one of: {', '.join(MODES)}")
        return value

    def topic(self) -> list[str]:
        return ([self.entity] if self.entity else []) + list(self.entities)


class TripleDoc(_Strict):
    id: int
    text: str
    score: float


class SubQuestionDoc(_Strict):
    index: int
    original: str
    reformulated: str
    answer: str
    cut: bool
    entities: list[str]
    triple_ids: list[int]
    scores: list[float]
    triples: list[TripleDoc]


class AnswerEntityDoc(_Strict):
    name: str
    node_id: str | None
    score: float
    support: list[int]


class StageTotal(_Strict):
    calls: int
    seconds: float
    prompt_tokens: int
    completion_tokens: int


class StartupTimings(_Strict):
    """Where one ``kgqa ask`` process spent its time outside the stages (seconds); only the
    parts this process made are present. The server answers from a warm process: no block."""

    neo4j_connect: float | None = None
    embedder_load: float | None = None
    embedder: str | None = Field(default=None, description="The question embedder's class.")
    llm_load: float | None = None
    llm_cpu_repack: bool | None = Field(
        default=None, description="Whether llama.cpp repacked the weights (llm.cpu_repack)."
    )
    prompt_pin: float | None = None
    pins_evaluated: int | None = None
    pins_loaded: int | None = None
    process_seconds: float | None = Field(
        default=None, description="From the process's start to the answer."
    )


class Timings(_Strict):
    stages: dict[str, StageTotal]
    total_seconds: float
    prompt_tokens: int
    completion_tokens: int
    startup: StartupTimings | None = Field(
        default=None, description="kgqa ask --json only: this process's start-up."
    )


class SavedRunRef(_Strict):
    run_id: str
    browser_cypher: str


class CacheDoc(_Strict):
    hit: bool = Field(description="True: served from the answer cache.")
    key: str
    stored_at: str


class AnswerDocument(_Strict):
    """One answered question (``kgqa ask --json``; ``POST /v1/ask``)."""

    question: str
    entities: list[str]
    mode: str
    model: str | None
    answer: str
    answer_text: str
    answer_names: list[str]
    answer_entities: list[AnswerEntityDoc]
    answer_entities_from_text: bool
    reasoning: str
    sub_questions: list[SubQuestionDoc]
    evidence_ids: list[int]
    candidates_count: int
    truncated: bool
    cut_stages: list[str]
    timings: Timings
    parameters: dict[str, Any]
    # Present only when asked for (check), linked from the words, saved, or cached.
    check: dict[str, Any] | None = None
    browser_cypher: str
    linked_entity: str | None = None
    saved_run: SavedRunRef | None = None
    cache: CacheDoc | None = None


class ErrorDetail(_Strict):
    type: str
    message: str = Field(description="The one line `kgqa` prints after 'kgqa: error: '.")
    exit_code: int
    suggestions: list[str] | None = None
    fields: list[dict[str, Any]] | None = None


class ErrorDocument(_Strict):
    error: ErrorDetail
