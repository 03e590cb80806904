"""kgqa.answers: one reader of answer text for the grounder, the check and the metrics."""

from __future__ import annotations

import pytest

from kgqa import answers as A
from kgqa.eval import datasets
from kgqa.pipeline import synthesize

pytestmark = pytest.mark.unit


def test_brackets():
    assert A.bracketed_entities("films of [A] and [ B ] and [A] and []") == ["A", "B"]
    assert A.strip_brackets("who directed [Dark City]") == "who directed Dark City"
    assert A.BRACKETED.findall("[x] [y]") == ["x", "y"]


def test_every_reader_of_brackets_is_this_one():
    # ask's topic entities and the eval datasets' question entities read the same way.
    from kgqa import service

    assert service.topic_names is A.topic_names  # ask reads [brackets] with it
    assert A.topic_names("films of [A] and [ B ] and [A]") == A.bracketed_entities("[A] [B]")
    q = datasets.parse_line("is [A] with [ B ] or [A]\tx", 1)
    assert list(q.entities) == A.bracketed_entities(q.text)
    assert q.plain_text == A.strip_brackets(q.text)


def test_answer_line_and_names():
    text = "**Answer:** The Crow, Dark City.\nExplanation: both are by Alex Proyas."
    assert A.answer_line(text) == "The Crow, Dark City."
    assert A.answer_names(text) == ["The Crow", "Dark City"]
    assert synthesize.answer_line is A.answer_line  # still importable where it used to be


def test_name_spans_take_the_callers_stop_words():
    text = "Film noir fans: see Blue"
    plain = {s.text for s in A.name_spans(text, 1)}
    assert {"Film", "Blue", "Film noir fans: see Blue"} <= plain
    extra = {s.text for s in A.name_spans(text, 1, A.STOP_WORDS | {"film"})}
    assert "Film" not in extra and "Blue" in extra
    assert "Film" not in A.text_candidates(text, A.STOP_WORDS | {"film"})
    assert "Film" in A.text_candidates(text)
    # Generic English only: lone "It" or "The" never names anything.
    assert not {s.text for s in A.name_spans("It is The end", 1)} & {"It", "The"}


def test_declines_and_mentions():
    assert A.declines("I could not find it") and A.declines("Unknown")
    assert not A.declines("Alex Proyas")
    assert A.mentions("Paris, Texas and The Crow", ["Paris", "Paris, Texas", "Crow"]) == [
        "Paris, Texas",
        "Crow",
    ]


def test_items_and_first_entity():
    names = A.EntityNames.of(["Paris, Texas", "Drama"])
    assert A.answer_items("Answer: Paris, Texas and drama.", (), names) == [
        A.Item("Paris, Texas", True),
        A.Item("drama", True),
    ]
    assert A.first_entity('I think: "Drama"', [], names) == "Drama"
    assert A.clean_item(' - "Hatari!" ', punctuation=False) == "Hatari!"
    assert A.norm("  Brad Pitt ") == "brad pitt"
