"""`kgqa ask`: entity extraction, the JSON shape and the text sections, with a fake pipeline."""

import json

import click
import pytest
from click.testing import CliRunner
from test_pipeline_modes import DECOMPOSITION, FakeRetriever

from kgqa.answers import bracketed_entities as entities_in_question
from kgqa.commands import ask_cmd
from kgqa.commands.ask_cmd import answer_sections
from kgqa.document import answer_document as answer_to_json
from kgqa.llm.fake import ScriptedLLM
from kgqa.pipeline.pipeline import ALL_MODES, KGRAGPipeline, PipelineParams

pytestmark = pytest.mark.unit

Q = "what genres are the movies written by [John Shirley] in"


def _kgrag_answer():
    llm = ScriptedLLM().enqueue(
        [
            DECOMPOSITION,
            "The Crow",
            "What genres is The Crow in?",
            "Action",
            "Action\nExplanation: The Crow is an action movie.",
        ]
    )
    pipe = KGRAGPipeline(llm, FakeRetriever(), PipelineParams(model="qwen-test", top_k=3), "kgrag")
    return pipe.answer(Q, ["John Shirley"])


def test_entities_come_from_brackets():
    assert entities_in_question("films of [A] and [ B ] and [A]") == ["A", "B"]
    assert entities_in_question("no entity here") == []


def test_mode_choices_match_the_pipeline():
    assert ask_cmd.MODE_CHOICES == ALL_MODES


def test_json_shape():
    data = answer_to_json(_kgrag_answer())
    assert set(data) == {
        "question",
        "entities",
        "mode",
        "model",
        "answer",
        "answer_text",
        "answer_names",
        "answer_entities",
        "answer_entities_from_text",
        "reasoning",
        "sub_questions",
        "evidence_ids",
        "candidates_count",
        "truncated",
        "cut_stages",
        "timings",
        "parameters",
    }
    assert data["answer"] == "Action" and data["answer_names"] == ["Action"]
    assert data["model"] == "qwen-test" and data["mode"] == "kgrag"
    sq = data["sub_questions"][1]
    assert sq["original"] == "What genres are those movies in?"
    assert sq["reformulated"] == "What genres is The Crow in?"
    assert sq["triple_ids"] == [t["id"] for t in sq["triples"]] and len(sq["triple_ids"]) == 3
    assert data["timings"]["stages"]["answer"]["calls"] == 2
    assert data["timings"]["stages"]["decompose"]["prompt_tokens"] > 0
    json.dumps(data)  # serializable as is


def _cli(monkeypatch, answer):
    seen = {}

    from ask_fakes import AskFactoryBase

    class FakeFactory(AskFactoryBase):
        def __init__(self, settings, log=None, **_):
            seen["settings"] = settings

        def pipeline(self, mode):
            seen["mode"] = mode

            class P:
                def answer(self, question, entities):
                    seen["entities"] = entities
                    return answer

            return P()

    monkeypatch.setattr("kgqa.factory.Factory", FakeFactory)
    group = click.Group(commands={"ask": ask_cmd.ask})
    return group, seen


def test_cli_json_uses_bracketed_entities_and_overrides(monkeypatch):
    group, seen = _cli(monkeypatch, _kgrag_answer())
    result = CliRunner().invoke(
        group, ["ask", Q, "--json", "--hops", "2", "--top-k", "7", "--model", "x.gguf"], obj={}
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["answer"] == "Action"
    assert seen["entities"] == ["John Shirley"] and seen["mode"] == "graph"  # the default mode
    s = seen["settings"]
    assert (s.retrieval.hops, s.retrieval.top_k, s.llm.model) == (2, 7, "x.gguf")


def test_cli_text_shows_answer_reasoning_sub_questions_triples_and_costs(monkeypatch):
    group, seen = _cli(monkeypatch, _kgrag_answer())
    result = CliRunner().invoke(group, ["ask", Q, "--entity", "E1", "--entity", "E2"], obj={})
    assert result.exit_code == 0, result.output
    out = result.output
    assert seen["entities"] == ["E1", "E2"]
    assert out.startswith("Answer\n  Action\n")
    for needle in (
        "Explanation\n  The Crow is an action movie.",
        "Chain of thought\n  movies by him, then their genres.",
        "2. What genres are those movies in?",
        "reformulated: What genres is The Crow in?",
        "(The Crow, has genre, Action)  #2",
        "top triples (3 of 3)",
        "decompose",
        "synthesize",
        "hops 3, top-k 3, 4 candidate triples",
    ):
        assert needle in out, needle


def test_text_output_lists_answer_entities_with_node_ids_and_support():
    from kgqa.types import Answer, AnswerEntity, ScoredTriple, SubAnswer, Triple

    t = Triple(7, "The Crow", "has_genre", "Action")
    answer = Answer(
        "q",
        ("The Crow",),
        "kgrag",
        "Action, Drama",
        sub_answers=(SubAnswer(1, "q", "q", "Action", evidence=(ScoredTriple(t, 0.9),)),),
        answer_entities=(
            AnswerEntity("Action", "4:x:1", 1.0, (7,)),
            AnswerEntity("Drama", "4:x:2", 0.0, ()),
        ),
        from_text=True,
    )
    sections = dict(answer_sections(answer))
    body = next(v for k, v in sections.items() if k.startswith("Answer entities"))
    assert "1. Action  (node 4:x:1)" in body
    assert "#7  (The Crow, has genre, Action)" in body
    assert "2. Drama  (node 4:x:2)" in body
    assert "no supporting triple" in body
    assert "read from the answer text" in body
