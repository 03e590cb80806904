"""Graph mode over a derived profile: the step vocabulary and grammar over the real schema,
steps parsed back to (relation, direction), inverse relations read as one, several topic
entities intersected. Invented people KB (tests/unit/test_profile.py)."""

from __future__ import annotations

import re

import pytest
from people_kb import derived, store

from kgqa.graph.paths import PathStep
from kgqa.graphmode.pipeline import GraphPipeline, step_example_turns
from kgqa.graphmode.vocabulary import END, END_LINE, StepVocabulary
from kgqa.graphmode.walk import GraphWalker
from kgqa.llm.fake import ScriptedLLM
from kgqa.profile.model import RelationWords

pytestmark = pytest.mark.unit


def named_profile():
    """The derived profile with hand-set words (what the LLM namer would give)."""
    p = derived()
    words = {
        "spouse": RelationWords("spouse", "people", "spouses", "married to"),
        "nationality": RelationWords("nationality", "people", "countries", "citizens of"),
        "has_child": RelationWords("has child", "parents", "children", "parents of"),
        "profession": RelationWords("profession", "people", "professions", "working as"),
        "capital": RelationWords("capital", "countries", "capitals", "with capital"),
    }
    from dataclasses import replace

    return p.with_(
        relations={r: replace(rel, words=words.get(r, rel.words)) for r, rel in p.relations.items()}
    )


def _llama_grammar(text: str) -> object:
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.LlamaGrammar.from_string(text, verbose=False)


def test_vocabulary_holds_canonical_steps_only() -> None:
    vocab = StepVocabulary(named_profile())
    assert PathStep("has_child", False) in vocab
    assert PathStep("has_child_inverse", True) not in vocab


def test_written_steps_parse_back_to_one_step_each() -> None:
    vocab = StepVocabulary(named_profile())
    first = [PathStep("spouse", True), PathStep("nationality", True), PathStep("has_child", True)]
    steps = ["spouses of [Ada]", "countries of those spouses", "capitals of those countries"]
    assert vocab.keys(steps, first) == [
        PathStep("spouse", True),
        PathStep("nationality", True),
        PathStep("capital", True),
    ]
    # a step the topic cannot take, and everything after it, is not in the vocabulary
    assert vocab.keys(["capitals of [Ada]", "countries of those capitals"], first) == [None, None]
    # written steps round-trip
    path = [PathStep("has_child", True), PathStep("has_child", False)]
    assert vocab.keys(vocab.write(path, "Ada"), first) == path
    assert vocab.write(path, "Ada") == ["children of [Ada]", "parents of those children"]


def test_the_grammar_follows_the_schema_and_compiles() -> None:
    vocab = StepVocabulary(named_profile())
    text = vocab.grammar([PathStep("nationality", True)], 2)
    _llama_grammar(text)
    rules = dict(line.split(" ::= ", 1) for line in text.strip().splitlines())
    assert '"countries of "' in rules["root"] and "spouses of" not in rules["root"]
    after = rules[f"s1-{vocab._index[PathStep('nationality', True)]}"]
    assert '"capitals of "' in after and '"<END>"' in after
    assert "spouses of" not in after  # countries have no spouses
    with pytest.raises(ValueError):
        vocab.grammar([], 2)


def test_steps_that_would_read_alike_get_their_relations_words() -> None:
    from dataclasses import replace

    p = named_profile()
    clash = replace(p.relations["profession"].words, object="countries")
    p = p.with_(
        relations={**p.relations, "profession": replace(p.relations["profession"], words=clash)}
    )
    vocab = StepVocabulary(p)
    first = [PathStep("nationality", True), PathStep("profession", True)]
    text = vocab.grammar(first, 1)
    assert "countries (nationality) of " in text and "countries (profession) of " in text
    assert vocab.keys(["countries (profession) of [Ada]"], first) == [PathStep("profession", True)]


def walker(profile) -> GraphWalker:
    def scorer(text, groups):
        text = text.lower()
        return {k: float(any(w in text for w in profile.words(k[0]).words.split())) for k in groups}

    return GraphWalker(store().frontier_edges, scorer, canonical=profile.canonical)


def checking(profile, embed, written=None, later_margin=0.02, **options) -> GraphPipeline:
    """A pipeline whose last-step check reads with ``embed`` (no cut to the question), the
    LLM writing ``written`` once when given."""
    llm = ScriptedLLM().enqueue([written]) if written is not None else ScriptedLLM()
    return GraphPipeline(
        llm,
        walker(profile),
        profile=profile,
        embed=embed,
        cut_steps=False,
        later_margin=later_margin,
        **options,
    )


def test_an_inverse_relation_feeds_the_same_step() -> None:
    p = named_profile()
    w = walker(p)
    # Cy's parents: stored as has_child (Ada, Ben -> Cy) and as has_child_inverse (Cy -> Ada)
    hops, answers = w.walk(["Cy"], ["parents of [Cy]"], [PathStep("has_child", False)])
    assert {a.name for a in answers} == {"Ada", "Ben"}
    assert all(len(a.support) == 2 for a in answers)  # one triple each way


def test_several_topic_entities_meet_where_their_steps_agree() -> None:
    p = named_profile()
    hops, answers = walker(p).intersect(["Norland", "Painter"], "which painter is from [Norland]")
    assert [a.name for a in answers] == ["Cy"]
    assert {h.start for h in hops} == {"Norland", "Painter"}
    assert len(answers[0].support) == 2  # one triple from each topic entity


def test_pipeline_writes_steps_in_the_kbs_words_and_follows_them() -> None:
    p = named_profile()
    llm = ScriptedLLM().enqueue(["1. spouses of [Ada]\n2. countries of those spouses\n<END>"])
    pipe = GraphPipeline(llm, walker(p), profile=p)
    answer = pipe.answer("what is the nationality of [Ada]'s spouse", ["Ada"])
    assert [e.name for e in answer.answer_entities] == ["Ostmark"]
    assert answer.parameters["path"] == [["spouse", "out"], ["nationality", "out"]]
    prompt = llm.calls[0].text
    assert "movie" not in prompt.lower()
    # the prompt's examples are the KB's own, written as the grammar writes them
    for question, steps in step_example_turns(p, pipe.vocabulary):
        assert question in prompt and steps.splitlines()[0] in prompt
    assert llm.calls[0].params.grammar is not None
    # held to the grammar, the call stops where END begins (its other tokens not decoded)
    assert END_LINE in llm.calls[0].params.stop


def test_only_the_end_of_a_step_grammar_starts_a_line_with_ends_first_character() -> None:
    vocab = StepVocabulary(named_profile())
    first = [PathStep("spouse", True), PathStep("nationality", True), PathStep("has_child", True)]
    for grammar in (vocab.grammar(first, 3), vocab.grammar(first, 2, answer=True)):
        lines = _GBNF_LINE_START.findall(grammar)
        assert lines and all(start[:1].isdigit() or start == END for start in lines), lines


_GBNF_LINE_START = re.compile(r'"\\n(?:" ")?([^"]*)"')


def test_one_step_choice_by_phrases_or_by_the_llm() -> None:
    p = named_profile()
    llm = ScriptedLLM().enqueue(["1. professions of [Ada]\n<END>"] * 2)
    by_llm = GraphPipeline(llm, walker(p), profile=p, one_step="llm")
    assert by_llm.answer("what does [Ada] do", ["Ada"]).answer_entities[0].name == "Engineer"
    by_phrases = GraphPipeline(llm, walker(p), profile=p, one_step="phrases")
    # the scorer reads "nationality" in the question itself
    answer = by_phrases.answer("what nationality is [Ada]", ["Ada"])
    assert answer.answer_entities[0].name == "Norland"


def test_the_llms_one_step_gives_way_to_phrasings_that_clearly_match_better() -> None:
    p = named_profile()
    question = "what nationality is [Ada]"
    # the scorer reads "nationality" in the question; the LLM's step says spouses
    llm = ScriptedLLM().enqueue(["1. spouses of [Ada]\n<END>"] * 2)
    pipe = GraphPipeline(llm, walker(p), profile=p, one_step="llm")
    scores = pipe.walker.first_scores(["Ada"], question)
    nationality, spouse = PathStep("nationality", True), PathStep("spouse", True)
    assert scores[nationality] > scores[spouse] + pipe.one_step_margin
    answer = pipe.answer(question, ["Ada"])
    assert [e.name for e in answer.answer_entities] == ["Norland"]
    assert answer.parameters["one_step_margin"] == pipe.one_step_margin
    trusting = GraphPipeline(llm, walker(p), profile=p, one_step="llm", one_step_margin=9.0)
    assert [e.name for e in trusting.answer(question, ["Ada"]).answer_entities] == ["Ben"]


def test_multi_entity_questions_need_no_decomposition() -> None:
    p = named_profile()
    llm = ScriptedLLM()
    answer = GraphPipeline(llm, walker(p), profile=p).answer(
        "which painter is from [Norland]", ["Norland", "Painter"]
    )
    assert [e.name for e in answer.answer_entities] == ["Cy"] and not llm.calls
    assert "path" not in answer.parameters


def test_the_papers_decomposition_prompt_gets_the_kbs_own_examples() -> None:
    from kgqa.pipeline.pipeline import KGRAGPipeline, decomposition_turns

    p = named_profile()
    turns = decomposition_turns(p)
    assert turns and all(
        q.startswith("Question: ") and "Sub-questions:\n1. " in a for q, a in turns
    )
    llm = ScriptedLLM().enqueue(
        ["Reasoning: one fact.\nSub-questions:\n1. Who is [Ada] married to?\n<END>"]
    )
    pipe = KGRAGPipeline(llm, None, mode="qd", profile=p)
    prompt = pipe.decomposer.template.render(question="who is married to [Ada]")
    text = "\n".join(m["content"] for m in prompt)
    assert all(q in text for q, _ in turns) and "movie" not in text.lower()
    # without a profile the prompt has no examples at all (never another KB's)
    bare = KGRAGPipeline(ScriptedLLM(), None, mode="qd").decomposer.template.render(question="q")
    assert [m["role"] for m in bare] == ["system", "user"]


def test_the_decomposition_prompt_has_no_more_unsplit_examples_than_split_ones() -> None:
    # Mostly "needs no splitting" examples taught the small model not to split a 2-hop
    # question; the profile's order is kept, the surplus one-fact examples are left out.
    from dataclasses import replace

    from kgqa.pipeline.pipeline import decomposition_turns
    from kgqa.profile.model import StepExample

    def ex(q: str, n: int) -> StepExample:
        subs = tuple(f"{q} part {i}?" for i in range(n))
        return StepExample(q, (), (), subs, "r")

    p = named_profile()
    examples = [ex("a", 1), ex("b", 1), ex("c", 2), ex("d", 1), ex("e", 1), ex("f", 3)]
    examples.append(replace(ex("g", 1), sub_questions=()))  # a graph-mode-only example
    turns = decomposition_turns(p.with_(examples=tuple(examples)))
    assert [q for q, _ in turns] == ["Question: a", "Question: b", "Question: c", "Question: f"]
    # a KB whose examples are all one fact keeps them all
    only = decomposition_turns(p.with_(examples=(ex("a", 1), ex("b", 1))))
    assert len(only) == 2


def test_one_step_auto_reads_hand_written_phrasings_else_the_llm(tmp_path) -> None:
    from kgqa.profile.files import apply_profile_file

    p = named_profile()
    assert GraphPipeline(ScriptedLLM(), walker(p), profile=p).one_step == "llm"
    own = tmp_path / "p.toml"
    own.write_text('[relations.spouse]\nout = ["who is X married to"]\n', encoding="utf-8")
    hand = apply_profile_file(p, own)
    assert hand.phrases_from == "file"
    assert GraphPipeline(ScriptedLLM(), walker(hand), profile=hand).one_step == "phrases"


def test_a_decomposition_is_cut_to_the_prefix_that_reads_like_the_question() -> None:
    import numpy as np

    p = named_profile()

    def embed(texts):  # the question reads like "the countries of [Ada]", not their capitals
        return np.array([[0.2, 1.0] if "capitals" in t else [1.0, 0.0] for t in texts])

    llm = ScriptedLLM().enqueue(
        ["1. countries of [Ada]\n2. capitals of those countries\n<END>"] * 2
    )
    cut = GraphPipeline(llm, walker(p), profile=p, embed=embed)
    answer = cut.answer("which country is [Ada] from", ["Ada"])
    assert answer.parameters["path"] == [["nationality", "out"]] and answer.parameters["cut_steps"]
    assert [e.name for e in answer.answer_entities] == ["Norland"]
    # without an embedder the written steps are followed as written
    plain = GraphPipeline(llm, walker(p), profile=p).answer("which country is [Ada] from", ["Ada"])
    assert plain.parameters["path"] == [["nationality", "out"], ["capital", "out"]]


_GBNF_TOKEN = re.compile(r'"((?:[^"\\]|\\.)*)"|(\[(?:[^\]\\]|\\.)*\]\+?)|([()|])|([\w-]+)')


def _as_regex(grammar: str) -> re.Pattern[str]:
    """The (finite) language of a step grammar as a regex, to test what it lets through."""
    rules = dict(line.split(" ::= ", 1) for line in grammar.strip().splitlines())

    def expand(name: str) -> str:
        out = []
        for lit, cls, op, ref in _GBNF_TOKEN.findall(rules[name]):
            if lit or (not cls and not op and not ref):
                out.append(re.escape(lit.encode().decode("unicode_escape")))
            elif cls:
                out.append(cls)
            elif op:
                out.append({"(": "(?:", ")": ")", "|": "|"}[op])
            else:
                out.append(f"(?:{expand(ref)})")
        return "".join(out)

    return re.compile(expand("root"))


def test_a_declared_answer_kind_holds_the_path_to_it() -> None:
    vocab = StepVocabulary(named_profile())
    first = [PathStep("spouse", True), PathStep("nationality", True), PathStep("has_child", True)]
    lang = _as_regex(vocab.grammar(first, 3, answer=True))
    ok = lang.fullmatch
    # reaching what was declared ends the steps there ...
    assert ok("answer: countries\n1. countries of [Ada]\n<END>")
    assert not ok("answer: countries\n1. countries of [Ada]\n2. capitals of those countries\n<END>")
    # ... a path may pass through other kinds on its way, and ends nowhere short of it
    assert ok("answer: capitals\n1. countries of [Ada]\n2. capitals of those countries\n<END>")
    assert not ok("answer: capitals\n1. countries of [Ada]\n<END>")
    assert ok("answer: countries\n1. spouses of [Ada]\n2. countries of those spouses\n<END>")
    # only what the topic can reach within the steps may be declared
    one = _as_regex(vocab.grammar(first, 1, answer=True)).fullmatch
    assert one("answer: countries\n1. countries of [Ada]\n<END>")
    assert not one("answer: capitals\n1. countries of [Ada]\n<END>")
    assert '"capitals"' not in vocab.grammar(first, 1, answer=True)
    # the plain grammar lets a path end at any step
    plain = _as_regex(vocab.grammar(first, 3)).fullmatch
    assert plain("1. countries of [Ada]\n<END>")
    assert plain("1. countries of [Ada]\n2. capitals of those countries\n<END>")


def test_steps_after_the_declared_answer_kind_are_dropped() -> None:
    p = named_profile()
    llm = ScriptedLLM().enqueue(
        ["answer: countries\n1. countries of [Ada]\n2. capitals of those countries\n<END>"]
    )
    pipe = GraphPipeline(llm, walker(p), profile=p, answer_type=True)
    answer = pipe.answer("which country is [Ada] from", ["Ada"])
    assert (
        answer.parameters["path"] == [["nationality", "out"]] and answer.parameters["answer_type"]
    )
    grammar = llm.calls[0].params.grammar
    assert grammar.splitlines()[0].startswith('root ::= "answer: " (') and '"countries"' in grammar
    _llama_grammar(grammar)
    # the examples declare their answers too
    assert "answer: " in llm.calls[0].text
    # a declared kind that no written step reaches keeps the steps as written
    assert pipe.cut_to_answer(
        "answer: professions", ["a", "b"], [PathStep("spouse", True), None]
    ) == (
        ["a", "b"],
        [PathStep("spouse", True), None],
    )


def test_a_later_step_is_swapped_where_the_path_then_reads_like_the_question() -> None:
    import numpy as np

    p = named_profile()

    def embed(texts):  # the question and "the children of ..." read alike, nothing else
        return np.array([[1.0, 0.0] if "child" in t else [0.0, 1.0] for t in texts])

    written = "1. spouses of [Ada]\n2. spouses of those spouses\n<END>"
    question = "who are the children of [Ada]'s spouse"
    llm = ScriptedLLM().enqueue([written] * 2)
    checked = GraphPipeline(
        llm, walker(p), profile=p, embed=embed, cut_steps=False, later_margin=0.02
    )
    answer = checked.answer(question, ["Ada"])
    assert answer.parameters["path"] == [["spouse", "out"], ["has_child", "out"]]
    assert [e.name for e in answer.answer_entities] == ["Cy"]
    assert "step 2: -[spouse]-> -> -[has child]->" in answer.reasoning
    # with a margin the swap does not clear, the path is followed as written (its second
    # step leads back to [Ada] and is skipped)
    plain = GraphPipeline(llm, walker(p), profile=p, embed=embed, cut_steps=False, later_margin=1.5)
    assert plain.answer(question, ["Ada"]).parameters["path"] == [["spouse", "out"]]


def test_a_later_step_also_reads_as_its_relations_question_asked_of_the_rest() -> None:
    from dataclasses import replace

    import numpy as np

    base = named_profile()
    child = base.relations["has_child"]
    asked = base.with_(
        relations=base.relations
        | {"has_child": replace(child, words=replace(child.words, ask_object="who are X's kids"))}
    )

    def embed(texts):  # only the question form says "kids"
        return np.array([[1.0, 0.0] if "kids" in t else [0.0, 1.0] for t in texts])

    question = "who are the kids of [Ada]'s spouse"
    written = "1. spouses of [Ada]\n2. spouses of those spouses\n<END>"
    for profile, swapped in ((asked, True), (base, False)):
        pipe = checking(profile, embed, written)
        path = [PathStep("spouse", True), PathStep("has_child", True)]
        assert pipe._asked_composed("Ada", path) == (
            "who are the spouses of [Ada]'s kids"
            if swapped
            else "the children of the spouses of [Ada]"
        )
        answer = pipe.answer(question, ["Ada"])
        assert (answer.parameters["path"][-1] == ["has_child", "out"]) is swapped


def test_a_later_step_is_swapped_only_for_one_the_frontier_really_has() -> None:
    import numpy as np

    p = named_profile()

    def embed(texts):  # the question and "the parents of ..." read alike, nothing else
        return np.array([[1.0, 0.0] if "parent" in t else [0.0, 1.0] for t in texts])

    # The grammar's kinds let "parents of those spouses" follow "spouses of [Ada]", but Ben
    # (Ada's spouse) has no parents in the graph: no swap to a step the walk would skip.
    question = "who are the parents of [Ada]'s spouse"
    written = "1. spouses of [Ada]\n2. children of those spouses\n<END>"
    pipe = checking(p, embed, written)
    assert PathStep("has_child", False) in pipe.vocabulary.options_after(PathStep("spouse", True))
    at_ben = pipe.walker.options_along(["Ada"], [PathStep("spouse", True)])
    assert {PathStep("has_child", True), PathStep("nationality", True)} <= at_ben
    assert PathStep("has_child", False) not in at_ben
    answer = pipe.answer(question, ["Ada"])
    assert answer.parameters["path"] == [["spouse", "out"], ["has_child", "out"]]
    assert "not at the frontier" not in answer.reasoning
    # A written last step the frontier lacks gives way to the real one reading most like
    # the question, with no margin to clear (the walk would skip it and answer the spouses).
    question = "what country is [Ada]'s spouse a citizen of"
    written = "1. spouses of [Ada]\n2. parents of those spouses\n<END>"

    def embed2(texts):
        return np.array([[1.0, 0.0] if "countr" in t else [0.0, 1.0] for t in texts])

    pipe = checking(p, embed2, written, later_margin=5.0)
    steps, keys, swaps = pipe.checked_later(
        question,
        "Ada",
        ["spouses of [Ada]", "parents of those spouses"],
        [PathStep("spouse", True), PathStep("has_child", False)],
        ["countries"],
    )
    assert keys == [PathStep("spouse", True), PathStep("nationality", True)]
    assert swaps and "is not at the frontier" in swaps[0]
    # ... and a path that stops before its last step is left as written
    assert pipe.walker.options_along(["Di"], [PathStep("has_child", True)]) == set()


def test_an_out_and_back_loop_after_the_asked_kind_is_cut_where_it_reads_less_alike() -> None:
    import numpy as np

    p = named_profile()

    def embed(texts):  # the longer path's phrase drifts away from the question
        return np.array([[0.5, 0.5] if "countries" in t else [1.0, 0.0] for t in texts])

    pipe = GraphPipeline(ScriptedLLM(), walker(p), profile=p, embed=embed, cut_loops=True)
    path = [PathStep("spouse", True), PathStep("nationality", True), PathStep("nationality", False)]
    steps = pipe.vocabulary.write(path, "Ada")
    question = "who is [Ada] married to"
    cut, keys, note = pipe.cut_loop(question, "Ada", steps, list(path), ["spouses"])
    assert keys == [PathStep("spouse", True)] and cut == steps[:1]
    assert note is not None and "out and back" in note
    # not before the asked kind is reached, and not a path that does not come back
    assert pipe.cut_loop(question, "Ada", steps, list(path), ["countries"])[2] is None
    onward = [PathStep("spouse", True), PathStep("nationality", True), PathStep("capital", True)]
    kept = pipe.cut_loop(question, "Ada", pipe.vocabulary.write(onward, "Ada"), onward, ["spouses"])
    assert kept[1] == onward and kept[2] is None


def test_an_out_and_back_loop_before_the_last_step_is_taken_out_where_the_graph_has_the_rest() -> (
    None
):
    import numpy as np

    p = named_profile()

    def embed(texts):  # the loop's countries drift the phrase away from the question
        return np.array([[0.5, 0.5] if "countries" in t else [1.0, 0.0] for t in texts])

    pipe = GraphPipeline(ScriptedLLM(), walker(p), profile=p, embed=embed, cut_loops=True)
    question = "what does [Ada] work as"
    looped = [PathStep("nationality", True), PathStep("nationality", False)]
    path = [*looped, PathStep("profession", True)]
    cut, keys, note = pipe.cut_loop(question, "Ada", pipe.vocabulary.write(path, "Ada"), path, [])
    assert keys == [PathStep("profession", True)]
    assert cut == pipe.vocabulary.write([PathStep("profession", True)], "Ada")
    assert note is not None and "steps 1-2" in note
    # Ada has no parents: without the loop the path has no step, so it stays as written
    path = [*looped, PathStep("has_child", False)]
    kept = pipe.cut_loop(question, "Ada", pipe.vocabulary.write(path, "Ada"), path, [])
    assert kept[1] == path and kept[2] is None
    # and not where the whole path reads more like the question
    path = [*looped, PathStep("profession", True)]
    question = "what do the people from the countries of [Ada] work as"
    alike = GraphPipeline(
        ScriptedLLM(),
        walker(p),
        profile=p,
        embed=lambda t: np.array([[0.5, 0.5] if ("countries" in x) else [0.0, 1.0] for x in t]),
        cut_loops=True,
    )
    assert alike.cut_loop(question, "Ada", alike.vocabulary.write(path, "Ada"), path, [])[2] is None


def test_what_a_loop_cut_leaves_of_a_longer_path_is_followed_as_written() -> None:
    import numpy as np

    p = named_profile()

    def embed(texts):  # the loop's countries drift the phrase away from the question
        return np.array([[0.5, 0.5] if "countries" in t else [1.0, 0.0] for t in texts])

    path = [PathStep("nationality", True), PathStep("nationality", False)]
    path.append(PathStep("profession", True))
    written = "\n".join(f"{i}. {s}" for i, s in enumerate(StepVocabulary(p).write(path, "Ada"), 1))
    # With one_step = phrases the question's words choose a one-hop question's relation
    # ("nationality" here); the one step a loop cut left of three is the written path's.
    pipe = checking(p, embed, written + "\n<END>", one_step="phrases", cut_loops=True)
    answer = pipe.answer("what do the people of [Ada]'s nationality work as", ["Ada"])
    assert "out and back" in answer.reasoning
    assert answer.parameters["path"] == [["profession", "out"]]
    assert [e.name for e in answer.answer_entities] == ["Engineer"]


def test_a_question_names_the_relations_whose_own_words_it_uses() -> None:
    from kgqa.graphmode.mentions import RelationMentions

    m = RelationMentions(named_profile())
    # "people" is the subject of three relations: it names none of them; an inverse is
    # the same relation as its partner.
    assert "people" not in m.words["spouse"] and "children" in m.words["has_child"]
    assert m.naming("who are the children of [Ada]", "has_child_inverse") == {"children"}
    question = "what is the nationality of [Ada]'s spouse"
    assert m.covers(question, [PathStep("spouse", True), PathStep("nationality", True)]) == 2
    assert m.covers(question, [PathStep("spouse", True), PathStep("has_child", True)]) is None
    # A bracketed name is the topic, not the question's words.
    assert m.naming("who married [Nationality Jones]", "nationality") == set()
    # A word names a relation word sharing a long enough beginning, or containing its start.
    assert m.naming("who are the childless parents", "has_child") == {"childless", "parents"}


@pytest.mark.parametrize("mentions", [False, True])
def test_a_last_step_the_question_names_no_word_of_gives_way_to_one_it_names(mentions) -> None:
    import numpy as np

    p = named_profile()

    def embed(texts):  # every reading as close as every other: only the words decide
        return np.ones((len(texts), 2)) / np.sqrt(2)

    pipe = checking(p, embed, mentions=mentions)
    written = [PathStep("spouse", True), PathStep("has_child", True)]
    steps, keys, swaps = pipe.checked_later(
        "what is the nationality of [Ada]'s spouse",
        "Ada",
        ["spouses of [Ada]", "children of those spouses"],
        list(written),
        ["countries", "children"],
    )
    if mentions:
        assert keys == [PathStep("spouse", True), PathStep("nationality", True)]
        assert "names a relation the question does not" in swaps[0]
        # The line names the words that decided, not the readings (all alike here).
        assert "the question's words 'nationality', 'spouse' name every relation" in swaps[0]
        assert "reads like it" not in swaps[0]
    else:
        assert keys == written and not swaps


def test_hand_written_examples_are_read_back_into_paths_with_their_topics_first_steps(
    tmp_path,
) -> None:
    from kgqa.profile.files import apply_profile_file

    own = tmp_path / "p.toml"
    own.write_text(
        "[[examples]]\n"
        'question = "what is the nationality of [Ben] \'s spouse"\n'
        'steps = ["spouses of [Ben]", "countries of those spouses"]\n'
        "[[examples]]\n"  # a topic the graph lacks: the steps of a node kind with its step
        'question = "what is the capital of [Zembla]"\n'
        'steps = ["capitals of [Zembla]"]\n',
        encoding="utf-8",
    )
    hand = apply_profile_file(named_profile(), own)
    assert all(not e.path and not e.first for e in hand.examples)
    llm = ScriptedLLM().enqueue(["1. spouses of [Ada]\n2. countries of those spouses\n<END>"])
    pipe = GraphPipeline(llm, walker(hand), profile=hand)
    ben, zembla = pipe.profile.examples
    assert ben.path == (PathStep("spouse", True), PathStep("nationality", True))
    assert set(ben.first) == {s for s in walker(hand).options_at(["Ben"]) if s in pipe.vocabulary}
    assert zembla.path == (PathStep("capital", True),) and PathStep("capital", True) in zembla.first
    assert pipe.hints
    pipe.answer("what is the nationality of [Ada]'s spouse", ["Ada"])
    prompt = llm.calls[0].text
    assert "what is the nationality of [Ben] 's spouse\n(first step, one of: " in prompt


def test_a_hand_written_example_the_grammar_cannot_write_is_kept_as_written(tmp_path) -> None:
    from kgqa.profile.files import apply_profile_file

    own = tmp_path / "p.toml"
    own.write_text(
        '[[examples]]\nquestion = "who knows [Ben]"\nsteps = ["friends of [Ben]"]\n',
        encoding="utf-8",
    )
    hand = apply_profile_file(named_profile(), own)
    pipe = GraphPipeline(ScriptedLLM(), walker(hand), profile=hand)
    (kept,) = pipe.profile.examples
    assert kept.steps == ("friends of [Ben]",) and kept.path == () and not pipe.hints


def test_a_loop_along_a_relation_the_question_does_not_name_gives_way_to_the_one_it_names() -> None:
    import numpy as np

    p = named_profile()

    def embed(texts):  # without the loop the path reads more like the question: a cut
        return np.array([[0.5, 0.5] if "spouses of" in t else [1.0, 0.0] for t in texts])

    loop = [PathStep("spouse", True), PathStep("spouse", False)]
    path = [*loop, PathStep("nationality", True)]
    written = "\n".join(f"{i}. {s}" for i, s in enumerate(StepVocabulary(p).write(path, "Di"), 1))
    # "profession" names the relation to go out and back along (Di -> Painter <- Cy), not the
    # spouses the small model wrote; the rest of the path is named by "nationality".
    question = "what nationality are the people who share a profession with [Di]"
    pipe = checking(p, embed, written + "\n<END>", cut_loops=True, mentions=True)
    answer = pipe.answer(question, ["Di"])
    assert answer.parameters["path"] == [
        ["profession", "out"],
        ["profession", "in"],
        ["nationality", "out"],
    ]
    assert [e.name for e in answer.answer_entities] == ["Norland"]
    assert "'profession' name -[profession]->" in answer.reasoning
    # A question that names no other relation: the loop is cut as before (Di's own country).
    plain = checking(p, embed, written + "\n<END>", cut_loops=True, mentions=True)
    answer = plain.answer("what nationality is [Di]", ["Di"])
    assert answer.parameters["path"] == [["nationality", "out"]]
    assert "reads like the question" in answer.reasoning
    # Nor where the words besides the rest's name the loop as written.
    kept = checking(p, embed, cut_loops=True, mentions=True).named_loop(
        "what nationality are the people who share a spouse with [Di]", "Di", path, 0
    )
    assert kept is None
