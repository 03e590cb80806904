"""The four LLM stages with a scripted LLM: parsing, chaining, prompts and parameters."""

import pytest

from kgqa.errors import ConfigError
from kgqa.llm.base import GenParams
from kgqa.llm.fake import ScriptedLLM
from kgqa.pipeline.answer import NO_FACTS, SubQuestionAnswerer, grouped_lines, render_triples
from kgqa.pipeline.decompose import Decomposer, parse_decomposition
from kgqa.pipeline.reformulate import Reformulator, clean_reformulation
from kgqa.pipeline.synthesize import Synthesizer, answer_line, answer_names
from kgqa.types import ScoredTriple, StageCost, SubAnswer, Triple

pytestmark = pytest.mark.unit

Q2 = "what genres are the movies written by [John Shirley] in"
GOOD_2HOP = (
    "Reasoning: I first need the movies that [John Shirley] wrote, then their genres.\n"
    "Sub-questions:\n"
    "1. Which movies were written by [John Shirley]?\n"
    "2. What genres are those movies in?\n"
)


def test_decomposer_parses_reasoning_and_sub_questions_and_records_cost():
    llm = ScriptedLLM().enqueue([GOOD_2HOP + "<END>\nQuestion: something else"])
    costs: list[StageCost] = []
    d = Decomposer(llm, GenParams()).run(Q2, costs)
    assert d.sub_questions == (
        "Which movies were written by [John Shirley]?",
        "What genres are those movies in?",
    )
    assert d.reasoning == "I first need the movies that [John Shirley] wrote, then their genres."
    assert not d.fallback
    assert llm.calls[0].params.stop == ("<END>",)
    assert llm.calls[0].text.rstrip().endswith(f"Question: {Q2}")
    assert [c.stage for c in costs] == ["decompose"] and costs[0].prompt_tokens > 0


def test_one_hop_question_keeps_itself_as_the_only_sub_question():
    raw = "Reasoning: One fact.\nSub-questions:\n1. What movies did [Tom Cullen] act in?\n"
    d = parse_decomposition("what does [Tom Cullen] act in", raw)
    assert d.sub_questions == ("What movies did [Tom Cullen] act in?",)
    assert not d.fallback


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "I cannot help with that.",
        "Reasoning: think think think " * 40,  # runaway reasoning, never reaches a list
        "Sub-questions:\n1. \n2. ?\n",  # empty items
    ],
)
def test_unparseable_output_falls_back_to_the_question(raw):
    d = parse_decomposition(Q2, raw)
    assert d.fallback and d.sub_questions == (Q2,) and d.raw == raw


def test_runaway_list_stops_at_restarted_numbering_and_is_capped():
    restarted = GOOD_2HOP + "1. Which movies were written by [Someone Else]?\n2. Who?\n"
    assert len(parse_decomposition(Q2, restarted).sub_questions) == 2
    long_list = "Sub-questions:\n" + "".join(f"{i}. Step number {i}?\n" for i in range(1, 10))
    d = parse_decomposition(Q2, long_list, max_sub_questions=4)
    assert d.sub_questions == tuple(f"Step number {i}?" for i in range(1, 5))
    assert not d.fallback


def test_text_after_the_list_ends_it_and_duplicates_are_dropped():
    raw = (
        "Thought: two steps\n1) Which movies did [X] write\n\n2) which movies did [x] write?\n"
        "3) What genres are those movies in?\nQuestion: who directed [Y]\n1. Who directed [Y]?"
    )
    d = parse_decomposition("q", raw)
    assert d.reasoning == "two steps"
    assert d.sub_questions == ("Which movies did [X] write?", "What genres are those movies in?")


def test_cut_output_drops_the_half_written_last_sub_question():
    raw = "Sub-questions:\n1. Which actors acted in [The Fighter]?\n2. Which movies did those act"
    assert parse_decomposition("q", raw, cut=True).sub_questions == (
        "Which actors acted in [The Fighter]?",
    )
    assert len(parse_decomposition("q", raw, cut=False).sub_questions) == 2


def test_first_sub_question_is_not_reformulated():
    llm = ScriptedLLM()
    assert Reformulator(llm, GenParams()).run("Which movies did [X] write?", []) == (
        "Which movies did [X] write?"
    )
    assert llm.calls == []


def test_reformulation_prompt_contains_earlier_answers_and_stops_at_question_mark():
    llm = ScriptedLLM().enqueue(["What genres are The Crow in? And also"])
    costs: list[StageCost] = []
    out = Reformulator(llm, GenParams()).run(
        "What genres are those movies in?",
        [("Which movies were written by [John Shirley]?", "The Crow")],
        costs,
    )
    assert out == "What genres are The Crow in?"
    prompt = llm.calls[0].text
    assert "1. Which movies were written by [John Shirley]? The Crow" in prompt
    assert prompt.rstrip().endswith("Question: What genres are those movies in?")
    assert "?" in llm.calls[0].params.stop
    assert [c.stage for c in costs] == ["reformulate"]


@pytest.mark.parametrize("garbage", ["", "   ", "\n\n", "???", "x" * 2000])
def test_garbage_reformulation_keeps_the_original(garbage):
    assert clean_reformulation("Who directed those movies?", garbage) == (
        "Who directed those movies?"
    )


def test_reformulation_labels_and_quotes_are_removed():
    assert (
        clean_reformulation("o?", 'Rewritten question: "Who directed Heat') == "Who directed Heat?"
    )


def _triples():
    return [
        ScoredTriple(Triple(7, "The Crow", "written_by", "John Shirley"), 0.9),
        ScoredTriple(Triple(8, "The Crow", "has_genre", "Action"), 0.5),
    ]


def test_answerer_puts_verbalized_triples_in_the_prompt_with_repeat_penalty():
    llm = ScriptedLLM().enqueue(["  The Crow \n"])
    params = GenParams(repeat_penalty=1.1)
    costs: list[StageCost] = []
    out = SubQuestionAnswerer(llm, params).run(
        "Which movies did [John Shirley] write?", _triples(), costs
    )
    assert out == "The Crow"
    prompt = llm.calls[0].text
    assert "(The Crow, written by, John Shirley)\n(The Crow, has genre, Action)" in prompt
    assert "Question: Which movies did [John Shirley] write?" in prompt
    assert llm.calls[0].params.repeat_penalty == 1.1
    assert costs[0].stage == "answer"


def test_grouped_facts_join_shared_subjects_and_objects_where_their_best_triple_ranked():
    def st(i, s, r, o):
        return ScoredTriple(Triple(i, s, r, o), 1.0 - i / 10)

    triples = [
        st(1, "Heat", "directed_by", "Michael Mann"),
        st(2, "Heat", "starred_actors", "Al Pacino"),
        st(3, "Thief", "directed_by", "Michael Mann"),
        st(4, "Heat", "starred_actors", "Robert De Niro"),
        st(5, "Heat", "release_year", "1995"),
    ]
    assert grouped_lines(triples) == [
        "(Heat; Thief, directed by, Michael Mann)",
        "(Heat, starred actors, Al Pacino; Robert De Niro)",
        "(Heat, release year, 1995)",
    ]
    assert render_triples(triples[:1], "grouped") == "(Heat, directed by, Michael Mann)"
    assert render_triples([], "grouped") == NO_FACTS
    llm = ScriptedLLM().enqueue(["Al Pacino"])
    SubQuestionAnswerer(llm, GenParams(), facts="grouped").run("who starred in [Heat]", triples)
    assert "(Heat, starred actors, Al Pacino; Robert De Niro)" in llm.calls[0].text
    with pytest.raises(ConfigError, match="facts must be one of triples, grouped"):
        SubQuestionAnswerer(llm, GenParams(), facts="tables")


def test_answerer_closed_book_and_empty_evidence():
    llm = ScriptedLLM().enqueue(["Heat", "Heat"])
    answerer = SubQuestionAnswerer(llm, GenParams())
    answerer.run("who directed [Heat]", None)
    assert "Facts" not in llm.calls[0].text and "who directed [Heat]" in llm.calls[0].text
    answerer.run("who directed [Heat]", [])
    assert NO_FACTS in llm.calls[1].text


def test_synthesizer_prompt_has_reasoning_and_sub_answers_and_512_tokens():
    llm = ScriptedLLM().enqueue(["Action\nExplanation: The Crow is an action movie."])
    subs = [
        SubAnswer(1, "Which movies?", "Which movies?", "The Crow"),
        SubAnswer(2, "Genres of those?", "What genres are The Crow in?", "Action"),
    ]
    out = Synthesizer(llm, GenParams(max_tokens=512)).run(Q2, "movies, then genres", subs)
    assert answer_line(out) == "Action"
    prompt = llm.calls[-1].text
    assert "Reasoning: movies, then genres" in prompt
    assert "1. Which movies? The Crow\n2. What genres are The Crow in? Action" in prompt
    assert llm.calls[-1].params.max_tokens == 512


def test_answer_line_and_names():
    text = "Final answer: Drama, Music, drama.\nExplanation: because."
    assert answer_line(text) == "Drama, Music, drama."
    assert answer_names(text) == ["Drama", "Music"]
    assert answer_names('\n**Answer:** "Tom Hanks"') == ["Tom Hanks"]
    assert answer_names("") == []
