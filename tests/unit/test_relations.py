"""How a relation is asked about and written as a step: phrasings per step (the profile's,
from a file such as the packaged MetaQA one, or generated from the relation's words), the
phrase scorer, and the step vocabulary and grammar under the MetaQA profile (what graph mode
measured on MetaQA with, sessions 1-3)."""

import re

import numpy as np
import pytest

from kgqa.graph.memory_store import MemoryStore
from kgqa.graph.paths import PathStep
from kgqa.graphmode.scoring import normalize_question, phrase_scorer
from kgqa.graphmode.vocabulary import StepVocabulary
from kgqa.loaders.base import triple_id
from kgqa.profile.derive import derive_profile, rule_words, step_phrasings
from kgqa.profile.files import apply_profile_file
from kgqa.profile.model import KBProfile
from kgqa.types import Triple

pytestmark = pytest.mark.unit

METAQA_RELATIONS = (
    "directed_by",
    "written_by",
    "starred_actors",
    "release_year",
    "has_genre",
    "in_language",
    "has_tags",
    "has_imdb_rating",
    "has_imdb_votes",
)
# A tiny movie KB with every MetaQA relation, so the MetaQA profile applies in full.
MOVIES = [
    ("Alien", "directed_by", "Ridley Scott"),
    ("Gladiator", "directed_by", "Ridley Scott"),
    ("Alien", "written_by", "Dan O'Bannon"),
    ("Gladiator", "written_by", "David Franzoni"),
    ("Alien", "starred_actors", "Sigourney Weaver"),
    ("Gladiator", "starred_actors", "Russell Crowe"),
    ("Alien", "release_year", "1979"),
    ("Gladiator", "release_year", "2000"),
    ("Alien", "has_genre", "Horror"),
    ("Gladiator", "has_genre", "Drama"),
    ("Alien", "in_language", "English"),
    ("Gladiator", "in_language", "English"),
    ("Alien", "has_tags", "space"),
    ("Gladiator", "has_tags", "rome"),
    ("Alien", "has_imdb_rating", "good"),
    ("Alien", "has_imdb_votes", "famous"),
]


def metaqa() -> KBProfile:
    store = MemoryStore(Triple(triple_id(s, r, o), s, r, o) for s, r, o in MOVIES)
    return apply_profile_file(derive_profile(store, "sha256:movies"), "metaqa")


def test_packaged_phrasings_cover_metaqa_relations_both_ways():
    profile = metaqa()
    for rel in METAQA_RELATIONS:
        for out in (True, False):
            phrases = profile.step_phrases(PathStep(rel, out))
            assert phrases, (rel, out)
            # every phrasing names the hop's start: the entity X, or "those"/"that" answers
            assert all("X" in p or re.search(r"\b(those|that)\b", p) for p in phrases), (rel, out)


def test_unknown_relations_get_generated_phrasings():
    profile = KBProfile("derived", "", {})
    generated = profile.step_phrases(PathStep("founded_by", True))
    assert generated == step_phrasings(PathStep("founded_by", True), rule_words("founded_by"))
    assert any("founded by" in p for p in profile.step_phrases(PathStep("founded_by", False)))
    assert all("X" in p for p in generated)


def test_normalize_question_replaces_the_bracketed_entity():
    assert normalize_question("who wrote [The Crow]?") == "who wrote X?"


def test_phrase_scorer_takes_the_best_phrasing_and_embeds_each_option_once():
    calls = []
    table = {
        "who wrote X": [1.0, 0.0],
        "movies written by X": [0.0, 1.0],
        "who directed X": [0.6, 0.8],
        "q": [1.0, 0.0],
    }

    def embed(texts):
        calls.append(list(texts))
        return np.array([table.get(t, table["q"]) for t in texts], dtype=np.float32)

    profile = KBProfile(
        "file",
        "",
        {},
        phrases={
            PathStep("written_by", True): ("who wrote X", "movies written by X"),
            PathStep("directed_by", True): ("who directed X",),
        },
    )
    score = phrase_scorer(embed, profile)
    groups = {("written_by", True): [], ("directed_by", True): []}
    first = score("q", groups)
    assert first[("written_by", True)] == pytest.approx(1.0)
    assert first[("directed_by", True)] == pytest.approx(0.6)
    score("q", groups)
    assert sum(len(c) > 1 or c != ["q"] for c in calls) == 2  # phrasings embedded once each


def _llama_grammar(text):
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.LlamaGrammar.from_string(text, verbose=False)


def test_step_vocabulary_maps_each_step_to_one_relation_and_direction():
    vocab = StepVocabulary(metaqa())
    movie_steps = [PathStep(r, True) for r in METAQA_RELATIONS]
    person = [PathStep("written_by", False), PathStep("directed_by", False)]
    assert vocab.keys(["movies written by [Roger L. Simon]"], person) == [
        PathStep("written_by", False)
    ]
    assert vocab.keys(["movies written by [X]", "writers of those movies?"], person) == [
        PathStep("written_by", False),
        PathStep("written_by", True),
    ]
    assert vocab.keys(["directors of [Gigi]", "movies of those directors?"], movie_steps) == [
        PathStep("directed_by", True),
        PathStep("directed_by", False),
    ]
    assert vocab.keys(["movies of those strangers"], person) == [None]
    assert vocab.keys(["movies tagged [stanley kubrick]"], [PathStep("has_tags", False)]) == [
        PathStep("has_tags", False)
    ]
    assert vocab.keys(["who directed it"], movie_steps) == [None]
    # every packaged relation has a step each way, and no two steps read alike
    texts = {s: vocab.write([s], "E")[0] for s in vocab.steps}
    assert len(texts) == 18 and len(set(texts.values())) == 18


def test_step_grammar_starts_at_the_topics_relations_and_alternates_sides():
    vocab = StepVocabulary(metaqa())
    text = vocab.grammar([PathStep("written_by", False), PathStep("no_such_relation", True)], 3)
    _llama_grammar(text)  # llama.cpp accepts it
    rules = dict(line.split(" ::= ", 1) for line in text.strip().splitlines())
    # step 1: only what the topic entity has, written with its [brackets]
    assert '"movies written by "' in rules["root"] and "directors of" not in rules["root"]
    assert "no_such" not in text
    after_in = rules[f"s1-{vocab._index[PathStep('written_by', False)]}"]
    # after an in-step the frontier is movies: only out-steps ("... of those movies"), or the end
    assert '"<END>"' in after_in and '"writers of " "those movies"' in after_in
    assert "movies directed by" not in after_in
    # after an out-step it is the relation's objects: the only way on (the MetaQA profile's
    # rule) is back into movies along the same relation ("movies of those writers")
    after_out = rules[f"s2-{vocab._index[PathStep('written_by', True)]}"]
    back = vocab._index[PathStep("written_by", False)]
    assert after_out == f'"\\n" "<END>" | "\\n3. " ("movies of those writers" s3-{back})'
    # the last allowed step can only end
    assert rules[f"s3-{back}"] == '"\\n" "<END>"'
    with pytest.raises(ValueError):
        vocab.grammar([PathStep("no_such_relation", True)], 3)


def test_own_relations_get_a_generated_step_vocabulary(tmp_path):
    own = tmp_path / "companies.toml"
    own.write_text(
        'subject_noun = "companies"\n[relations.founded_by]\nobject = "founders"\n'
        'verb = "founded by"\nout = ["who founded X"]\n',
        encoding="utf-8",
    )
    facts = [("Acme", "founded_by", "Ada"), ("Acme", "based_in", "Oslo")]
    store = MemoryStore(Triple(triple_id(s, r, o), s, r, o) for s, r, o in facts)
    profile = apply_profile_file(derive_profile(store, "sha256:c"), own)
    vocab = StepVocabulary(profile)
    assert vocab.keys(["companies founded by [Ada]"], [PathStep("founded_by", False)]) == [
        PathStep("founded_by", False)
    ]
    based = vocab.write([PathStep("based_in", True)], "Acme")[0]
    assert based.endswith("of [Acme]") and "based in" in based
    assert vocab.write([PathStep("founded_by", True), PathStep("founded_by", False)], "Acme") == [
        "founders of [Acme]",
        "companies of those founders",
    ]
    _llama_grammar(vocab.grammar([PathStep("founded_by", False)], 2))


def test_normalize_question_drops_a_kind_word_before_the_entity():
    kinds = frozenset({"film", "films", "movie", "movies"})
    assert normalize_question("which words describe film [Saw V]", kinds) == (
        "which words describe X"
    )
    assert normalize_question("what language is the movie [Heat] in", kinds) == (
        "what language is X in"
    )
    # a kind word elsewhere stays, and so does every word without kinds
    assert normalize_question("which films did [Ada] write", kinds) == "which films did X write"
    assert normalize_question("describe film [Saw V]") == "describe film X"
