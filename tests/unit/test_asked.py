"""What a question asks for, read from its wording (kgqa.graphmode.asked), and the step
grammar that holds a path's end to it. Plain English and an invented people KB: no dataset's
words."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from people_kb import derived
from test_graphmode import _as_regex, _llama_grammar, named_profile, walker

from kgqa.graph.paths import PathStep
from kgqa.graphmode.asked import WH_PHRASES, Asked, AskedKinds, asked_phrase, other_words
from kgqa.graphmode.pipeline import GraphPipeline
from kgqa.graphmode.vocabulary import StepVocabulary
from kgqa.llm.fake import ScriptedLLM

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("question", "words"),
    [
        ("which country is [Ada] from ?", ("country",)),
        (
            "which professional football team does [Ada] play for ?",
            ("professional", "football", "team"),
        ),
        ("what number does [Ada] wear", ("number",)),
        ("what is the nationality of [Ada] 's spouse ?", ("nationality",)),
        ("what is [Ada]'s nationality", ("nationality",)),
        ("what were the release dates of [Ada] written books", ("release", "dates")),
        ("name a company that has an employee from [Norland]", ("company",)),
        ("what are the names of the children of [Ada]", ("children",)),
        ("which painters share the teacher with [Ada]", ("painters",)),
        ("the books written by [Ada] were in which languages", ("languages",)),
        ("what language is the book [X] in", ("language",)),
        ("which authors co-write books with [Ada]", ("authors",)),
    ],
)
def test_a_noun_phrase_names_what_is_asked(question: str, words: tuple[str, ...]) -> None:
    asked = asked_phrase(question)
    assert asked == Asked(words) and asked.held
    # compared as the phrase and its head (the last word)
    assert asked.texts()[-1] == words[-1]


@pytest.mark.parametrize(
    ("question", "wh"),
    [
        ("who is married to [Ada] ?", "who"),
        ("the painter [Ada] is a colleague of who", "who"),
        ("which person taught [Ada]", "who"),
        ("where is the company that [Ada] works for ?", "where"),
        ("when was [Ada] born", "when"),
    ],
)
def test_a_bare_wh_word_asks_for_a_kind_without_holding_the_path(question: str, wh: str) -> None:
    asked = asked_phrase(question)
    assert asked is not None and asked.wh == WH_PHRASES[wh] and not asked.held


@pytest.mark.parametrize(
    "question",
    ["how many children does [Ada] have", "describe [Ada] in a few words", "what did [Ada] paint"],
)
def test_nothing_is_read_where_the_wording_names_nothing(question: str) -> None:
    assert asked_phrase(question) is None


def _embed(texts: list[str]) -> np.ndarray:
    """Unit vectors over a fixed set of words: a word's similarity to a text is high when the
    text holds it (or its plural)."""
    axes = ["country", "spouse", "capital", "child", "profession", "people", "person"]
    out = np.zeros((len(texts), len(axes) + 64), dtype=np.float32)
    for i, text in enumerate(texts):
        for j, axis in enumerate(axes):
            out[i, j] = text.count(axis) + 0.5 * text.count(axis[:4])
        if not out[i].any():  # a text of none of the words: like nothing else
            out[i, len(axes) + zlib.crc32(text.encode()) % 64] = 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_the_kbs_nouns_are_chosen_by_similarity_with_a_floor_and_a_margin() -> None:
    vocab = StepVocabulary(named_profile())
    nouns = vocab.noun_examples()
    assert set(nouns) == set(vocab.answer_nouns()) and "countries" in nouns
    # real names from the example triples, no underscores
    assert all("_" not in n for names in nouns.values() for n in names)
    kinds = AskedKinds(_embed, nouns, floor=0.5, margin=0.05)
    assert kinds.choose(Asked(("country",))) == ["countries"]
    # only among the nouns the topic can reach
    assert kinds.choose(Asked(("country",)), among=["spouses", "children"]) == []
    # nothing clearly matching: nothing chosen
    assert kinds.choose(Asked(("colour",))) == []


def test_a_bare_wh_word_takes_the_nouns_the_kbs_own_questions_ask_with_it() -> None:
    p = named_profile()
    from dataclasses import replace

    spouse = p.relations["spouse"]
    p = p.with_(
        relations={
            **p.relations,
            "spouse": replace(
                spouse, words=replace(spouse.words, ask_object="who is married to X")
            ),
        }
    )
    vocab = StepVocabulary(p)
    assert "who" in vocab.noun_asks()["spouses"]
    who = asked_phrase("who is married to [Ada]")
    assert who is not None and who.word == "who"
    # the embedder makes nothing of "person or people" here; the profile's question does
    kinds = AskedKinds(_embed, vocab.noun_examples(), floor=0.9, asks=vocab.noun_asks())
    assert kinds.choose(who) == ["spouses"]
    assert kinds.choose(who, among=["countries"]) == []
    assert AskedKinds(_embed, vocab.noun_examples(), floor=0.9).choose(who) == []


def test_reachable_nouns_follow_the_schema() -> None:
    vocab = StepVocabulary(named_profile())
    first = [PathStep("spouse", True), PathStep("nationality", True)]
    one = vocab.reachable_nouns(first, 1)
    assert "countries" in one and "capitals" not in one
    assert "capitals" in vocab.reachable_nouns(first, 2)


def test_the_grammar_holds_the_path_to_the_asked_noun() -> None:
    vocab = StepVocabulary(named_profile())
    first = [PathStep("spouse", True), PathStep("nationality", True), PathStep("has_child", True)]
    held = vocab.grammar(first, 3, ends=["countries"])
    _llama_grammar(held)
    ok = _as_regex(held).fullmatch
    assert ok("1. countries of [Ada]\n<END>")
    assert not ok("1. countries of [Ada]\n2. capitals of those countries\n<END>")
    assert not ok("1. spouses of [Ada]\n<END>")
    assert ok("1. spouses of [Ada]\n2. countries of those spouses\n<END>")
    # of several nouns, the path is held to the best one's and may end at the others'
    two = _as_regex(vocab.grammar(first, 3, ends=["countries", "spouses"])).fullmatch
    assert two("1. spouses of [Ada]\n<END>")
    assert two("1. spouses of [Ada]\n2. countries of those spouses\n<END>")
    assert not two("1. countries of [Ada]\n2. capitals of those countries\n<END>")
    # not held ("who"): the path may pass the kind and end at it later, never elsewhere
    loose = _as_regex(vocab.grammar(first, 3, ends=["spouses"], held=False)).fullmatch
    assert loose("1. spouses of [Ada]\n<END>")
    assert loose("1. spouses of [Ada]\n2. spouses of those spouses\n<END>")
    assert not loose("1. countries of [Ada]\n<END>")
    # a noun no path reaches within the steps: the plain grammar
    assert vocab.grammar(first, 1, ends=["capitals"]) == vocab.grammar(first, 1)


def test_the_pipeline_reads_the_asked_noun_and_says_so() -> None:
    p = named_profile()
    llm = ScriptedLLM().enqueue(["1. countries of [Ada]\n<END>"])
    vocab = StepVocabulary(p)
    pipe = GraphPipeline(
        llm, walker(p), profile=p, asked=AskedKinds(_embed, vocab.noun_examples(), floor=0.5)
    )
    answer = pipe.answer("which country is [Ada] from", ["Ada"])
    assert [e.name for e in answer.answer_entities] == ["Norland"]
    assert answer.parameters["asked_kind"] and answer.parameters["path"] == [["nationality", "out"]]
    assert answer.reasoning.startswith("asks for: countries")
    first = pipe.first_steps(["Ada"])
    assert llm.calls[0].params.grammar == vocab.grammar(first, pipe.params.hops, ends=["countries"])
    # a wording that names nothing: the plain grammar, nothing said
    llm.enqueue(["1. countries of [Ada]\n<END>"])
    plain = pipe.answer("describe [Ada]", ["Ada"])
    assert llm.calls[1].params.grammar == vocab.grammar(first, pipe.params.hops)
    assert not plain.reasoning.startswith("asks for")


def test_off_by_default() -> None:
    p = derived()
    assert GraphPipeline(ScriptedLLM(), walker(p), profile=p).asked is None


def test_a_held_path_the_question_reads_as_one_step_takes_that_step() -> None:
    p = named_profile()
    vocab = StepVocabulary(p)
    asked = AskedKinds(_embed, vocab.noun_examples(), floor=0.5)
    # held to countries, the model goes through the spouse; the phrasings read "nationality"
    llm = ScriptedLLM().enqueue(["1. spouses of [Ada]\n2. countries of those spouses\n<END>"] * 2)
    pipe = GraphPipeline(llm, walker(p), profile=p, asked=asked)
    answer = pipe.answer("which country is the nationality of [Ada]", ["Ada"])
    assert answer.parameters["path"] == [["nationality", "out"]]
    assert [e.name for e in answer.answer_entities] == ["Norland"]
    # unless the phrasings do not beat the model's first step by the margin
    trusting = GraphPipeline(llm, walker(p), profile=p, asked=asked, one_step_margin=9.0)
    answer = trusting.answer("which country is the nationality of [Ada]", ["Ada"])
    assert answer.parameters["path"] == [["spouse", "out"], ["nationality", "out"]]
    assert [e.name for e in answer.answer_entities] == ["Ostmark"]


def test_a_question_answered_by_its_own_words_keeps_to_the_asked_kind() -> None:
    p = named_profile()
    vocab = StepVocabulary(p)
    asked = AskedKinds(_embed, vocab.noun_examples(), floor=0.5)
    llm = ScriptedLLM().enqueue(["1. countries of [Ada]\n<END>"] * 2)
    question = "which country is the spouse of [Ada] from"
    # the phrasings read "spouse" in the question; the question asks for a country
    by_words = GraphPipeline(llm, walker(p), profile=p, one_step="phrases")
    assert by_words.answer(question, ["Ada"]).parameters["path"] == [["spouse", "out"]]
    held = GraphPipeline(llm, walker(p), profile=p, one_step="phrases", asked=asked)
    answer = held.answer(question, ["Ada"])
    assert answer.parameters["path"] == [["nationality", "out"]]
    assert [e.name for e in answer.answer_entities] == ["Norland"]


def test_the_words_that_may_name_a_kind_leave_out_the_entitys_label() -> None:
    assert other_words("what are some words that describe movie [Ada]") == [
        "some",
        "words",
        "describe",
    ]
    assert other_words("the teacher of [Ada] also taught painters") == [
        "teacher",
        "also",
        "taught",
        "painters",
    ]


def _returning(question: str, **options: object) -> GraphPipeline:
    p = named_profile()
    vocab = StepVocabulary(p)
    llm = ScriptedLLM().enqueue(["1. countries of [Ada]\n2. people of those countries\n<END>"])
    asked = AskedKinds(_embed, vocab.noun_examples(), floor=0.5)
    return GraphPipeline(
        llm, walker(p), profile=p, asked=asked, embed=_embed, cut_steps=False, **options
    )


def test_a_last_step_straight_back_to_what_nothing_names_is_dropped() -> None:
    # nothing asked is read, and "person" only labels [Ada]: the people of her country are
    # not what the question wants
    question = "describe the person [Ada] in a few words"
    answer = _returning(question, cut_loops=True).answer(question, ["Ada"])
    assert answer.parameters["path"] == [["nationality", "out"]]
    assert [e.name for e in answer.answer_entities] == ["Norland"]
    assert "goes straight back along the relation of step 1 to people" in answer.reasoning
    # a question that names them keeps the step
    named = "the country of [Ada] also has people"
    kept = _returning(named, cut_loops=True).answer(named, ["Ada"])
    assert kept.parameters["path"] == [["nationality", "out"], ["nationality", "in"]]
    assert {e.name for e in kept.answer_entities} == {"Cy"}
    # off with graph.cut_loops
    plain = _returning(question, cut_loops=False).answer(question, ["Ada"])
    assert plain.parameters["path"] == [["nationality", "out"], ["nationality", "in"]]
