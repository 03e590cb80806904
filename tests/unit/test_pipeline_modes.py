"""Mode wiring of KGRAGPipeline with a scripted LLM and an in-memory retriever."""

import re
from collections.abc import Sequence

import pytest

from kgqa.errors import ConfigError, KGQAError, PromptError
from kgqa.llm.fake import ScriptedLLM
from kgqa.pipeline.pipeline import MODES, KGRAGPipeline, PipelineParams
from kgqa.types import Candidates, ScoredTriple, Triple

pytestmark = pytest.mark.unit

KB = [
    Triple(1, "The Crow", "written_by", "John Shirley"),
    Triple(2, "The Crow", "has_genre", "Action"),
    Triple(3, "The Crow", "directed_by", "Alex Proyas"),
    Triple(4, "Dark City", "directed_by", "Alex Proyas"),
    Triple(5, "Dark City", "has_genre", "Science Fiction"),
    Triple(6, "Heat", "has_genre", "Crime"),
]


class FakeRetriever:
    """Bidirectional hop expansion over KB; top-K by shared lower-case words."""

    def __init__(self):
        self.calls: list[tuple] = []

    def candidates(self, entities: Sequence[str], hops: int) -> Candidates:
        self.calls.append(("candidates", tuple(entities), hops))
        frontier, seen, by_hop = set(entities), set(), []
        for _ in range(hops):
            layer = tuple(t for t in KB if t.id not in seen and {t.subject, t.object} & frontier)
            seen |= {t.id for t in layer}
            frontier |= {n for t in layer for n in (t.subject, t.object)}
            by_hop.append(layer)
        return Candidates(tuple(entities), hops, tuple(by_hop))

    def top_k(self, text: str, candidates: Candidates, k: int) -> list[ScoredTriple]:
        self.calls.append(("top_k", text, k))
        words = set(re.findall(r"\w+", text.lower()))
        scored = [
            ScoredTriple(t, float(len(words & set(re.findall(r"\w+", t.verbalize().lower())))))
            for t in candidates.triples
        ]
        return sorted(scored, key=lambda s: (-s.score, s.triple.id))[:k]


DECOMPOSITION = (
    "Reasoning: movies by him, then their genres.\nSub-questions:\n"
    "1. Which movies were written by [John Shirley]?\n2. What genres are those movies in?\n<END>"
)
Q = "what genres are the movies written by [John Shirley] in"


def _pipeline(mode, llm, retriever=None, **params):
    return KGRAGPipeline(llm, retriever, PipelineParams(model="m", **params), mode)


def test_kgrag_runs_every_stage_in_order_and_chains_answers():
    llm = ScriptedLLM().enqueue(
        [
            DECOMPOSITION,
            "The Crow",
            "What genres is The Crow in?",
            "Action",
            "Action\nExplanation: x",
        ]
    )
    retriever = FakeRetriever()
    answer = _pipeline("kgrag", llm, retriever, hops=2, top_k=3).answer(Q, ["John Shirley"])
    assert answer.text == "Action\nExplanation: x"
    assert [c.stage for c in answer.costs] == [
        "decompose",
        "candidates",
        "top_k",
        "answer",
        "reformulate",
        "top_k",
        "answer",
        "synthesize",
    ]
    # Candidates are fetched once; each sub-question picks top-K with its reformulated text.
    assert retriever.calls[0] == ("candidates", ("John Shirley",), 2)
    assert [c for c in retriever.calls if c[0] == "top_k"] == [
        ("top_k", "Which movies were written by [John Shirley]?", 3),
        ("top_k", "What genres is The Crow in?", 3),
    ]
    first, second = answer.sub_answers
    assert (first.answer, second.original, second.reformulated, second.answer) == (
        "The Crow",
        "What genres are those movies in?",
        "What genres is The Crow in?",
        "Action",
    )
    # The reformulation prompt carries answer 1; the sub-answer prompt carries the triples.
    assert "Which movies were written by [John Shirley]? The Crow" in llm.calls[2].text
    assert "(The Crow, has genre, Action)" in llm.calls[3].text
    assert "2. What genres is The Crow in? Action" in llm.calls[4].text
    assert answer.evidence_ids == tuple(
        dict.fromkeys([t.triple.id for s in answer.sub_answers for t in s.evidence])
    )
    assert answer.candidates_count == 3  # John Shirley -> The Crow -> its genre, its director
    assert answer.reasoning == "movies by him, then their genres."
    assert answer.parameters["mode"] == "kgrag" and answer.parameters["top_k"] == 3
    assert answer.parameters["model"] == "m" and answer.parameters["seed"] == 0


def test_kaping_makes_no_decomposition_call():
    llm = ScriptedLLM().enqueue(["Action"])
    retriever = FakeRetriever()
    answer = _pipeline("kaping", llm, retriever, hops=1, top_k=2).answer(Q, ["John Shirley"])
    assert len(llm.calls) == 1 and "Facts:" in llm.calls[0].text and Q in llm.calls[0].text
    assert [c.stage for c in answer.costs] == ["candidates", "top_k", "answer"]
    assert retriever.calls[1] == ("top_k", Q, 2)
    assert answer.text == "Action" and answer.reasoning == ""
    assert answer.sub_answers[0].evidence and answer.evidence_ids == (1,)


def test_qd_never_calls_the_retriever():
    llm = ScriptedLLM().enqueue(
        [DECOMPOSITION, "The Crow", "Genres of The Crow?", "Action", "Action"]
    )
    retriever = FakeRetriever()
    answer = _pipeline("qd", llm, retriever).answer(Q, ["John Shirley"])
    assert retriever.calls == []
    assert "Facts:" not in llm.calls[1].text
    assert [c.stage for c in answer.costs] == [
        "decompose",
        "answer",
        "reformulate",
        "answer",
        "synthesize",
    ]
    assert answer.evidence_ids == () and answer.candidates_count == 0


def test_llm_mode_makes_exactly_one_call_and_needs_no_entity():
    llm = ScriptedLLM().enqueue(["Action"])
    answer = _pipeline("llm", llm).answer(Q, [])
    assert len(llm.calls) == 1 and answer.text == "Action" and answer.sub_answers == ()
    assert [c.stage for c in answer.costs] == ["answer"]


def test_one_hop_decomposition_still_synthesizes_and_fallback_uses_the_question():
    llm = ScriptedLLM().enqueue(["no list at all", "Action", "Action"])
    answer = _pipeline("qd", llm).answer(Q, [])
    assert [s.reformulated for s in answer.sub_answers] == [Q]
    assert len(llm.calls) == 3


def test_graph_modes_need_a_retriever_and_an_entity():
    with pytest.raises(ConfigError, match="needs the graph retriever"):
        _pipeline("kgrag", ScriptedLLM())
    with pytest.raises(KGQAError, match="no topic entity"):
        _pipeline("kaping", ScriptedLLM(), FakeRetriever()).answer("who?", [])
    with pytest.raises(ConfigError, match="kgrag, kaping, qd, llm"):
        _pipeline("graph", ScriptedLLM())
    assert MODES == ("kgrag", "kaping", "qd", "llm")


def test_a_broken_prompt_override_fails_when_the_pipeline_is_built(tmp_path):
    (tmp_path / "synthesize.txt").write_text("Question: {question}\n{sub_answers}")
    with pytest.raises(PromptError, match=r"\{reasoning\}"):
        _pipeline("llm", ScriptedLLM(), prompts_dir=tmp_path)


class PinningLLM(ScriptedLLM):
    def __init__(self):
        super().__init__()
        self.pins: list = []

    def pin_prefix(self, prompt):
        self.pins.append(prompt)


@pytest.mark.parametrize("mode,pins", [("kgrag", 4), ("qd", 4), ("kaping", 1), ("llm", 1)])
def test_every_stage_pins_its_fixed_prompt_prefix(mode, pins):
    llm = PinningLLM()
    pipeline = _pipeline(mode, llm, FakeRetriever())
    assert len(llm.pins) == pins and llm.calls == []
    if pins == 4:
        # The pinned prompt is the decomposition prompt up to the question itself.
        assert (
            llm.pins[0][:-1]
            == KGRAGPipeline(
                ScriptedLLM(), None, PipelineParams(), "qd"
            ).decomposer.template.render(question="Q")[:-1]
        )
    # The answer prompt of every sub-question continues the last pin: its instructions.
    facts = [ScoredTriple(Triple(1, "Heat", "directed_by", "Michael Mann"), 0.9)]
    asked = pipeline.answerer.prompt(
        "who directed Heat?", facts if mode in ("kgrag", "kaping") else None
    )
    assert llm.pins[-1][:-1] == asked[:-1] and llm.pins[-1][-1] != asked[-1]
