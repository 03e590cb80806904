import re

import numpy as np
import pytest

from kgqa.errors import ConfigError
from kgqa.pipeline.relations import (
    RelationPhrases,
    generated_phrases,
    normalize_question,
    phrase_scorer,
)

pytestmark = pytest.mark.unit


def test_packaged_phrasings_cover_metaqa_relations_both_ways():
    phrases = RelationPhrases.load()
    for rel in (
        "directed_by",
        "written_by",
        "starred_actors",
        "release_year",
        "has_genre",
        "in_language",
        "has_tags",
        "has_imdb_rating",
        "has_imdb_votes",
    ):
        for out in (True, False):
            assert phrases.described[(rel, out)], (rel, out)
            # every phrasing names the hop's start: the entity X, or "those"/"that" earlier answers
            assert all(
                "X" in p or re.search(r"\b(those|that)\b", p) for p in phrases.phrases(rel, out)
            ), (rel, out)


def test_unknown_relations_get_generated_phrasings(tmp_path):
    phrases = RelationPhrases({})
    assert phrases.phrases("founded_by", True) == generated_phrases("founded_by", True)
    assert "founded by" in phrases.phrases("founded_by", False)[0]
    with pytest.raises(ConfigError, match="cannot read relation phrasings"):
        RelationPhrases.load(tmp_path / "missing.toml")
    own = tmp_path / "r.toml"
    own.write_text('[founded_by]\nout = ["who founded X"]\n')
    assert RelationPhrases.load(own).phrases("founded_by", True) == ["who founded X"]


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

    phrases = RelationPhrases(
        {
            ("written_by", True): ["who wrote X", "movies written by X"],
            ("directed_by", True): ["who directed X"],
        }
    )
    score = phrase_scorer(embed, phrases)
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
    from kgqa.pipeline.relations import StepVocabulary

    vocab = StepVocabulary(RelationPhrases.load())
    assert vocab.key("movies written by [Roger L. Simon]") == ("written_by", False)
    assert vocab.key("writers of those movies?") == ("written_by", True)
    assert vocab.key("movies starring those writers") == ("starred_actors", False)
    assert vocab.key("movies of those directors?") == ("directed_by", False)
    assert vocab.key("movies of those strangers") is None
    assert vocab.key("directors of [Gigi]") == ("directed_by", True)
    assert vocab.key("movies tagged [stanley kubrick]") == ("has_tags", False)
    assert vocab.key("who directed it") is None
    # every packaged relation has a step each way, and no two steps read alike
    steps = {
        (rel, out): vocab.key(f"{noun} of those movies" if out else f"movies {verb} [E]")
        for rel, (noun, verb) in vocab.words.items()
        for out in (True, False)
    }
    assert all(steps[k] == k for k in steps) and len(steps) == 18


def test_step_grammar_starts_at_the_topics_relations_and_alternates_sides():
    from kgqa.pipeline.relations import StepVocabulary

    vocab = StepVocabulary(RelationPhrases.load())
    text = vocab.grammar([("written_by", False), ("no_such_relation", True)], 3)
    _llama_grammar(text)  # llama.cpp accepts it
    rules = dict(line.split(" ::= ", 1) for line in text.strip().splitlines())
    # step 1: only what the topic entity has, written with its [brackets]
    assert '"movies written by "' in rules["root"] and "directors of" not in rules["root"]
    assert "no_such" not in text
    # after an in-step the frontier is movies: only out-steps ("... of those movies"), or the end
    after_in = rules["s1-i-written-by"]
    assert '"<END>"' in after_in and '"writers of those movies"' in after_in
    assert "movies directed by" not in after_in
    # after an out-step it is the relation's objects: the only way on is back into movies
    # along the same relation ("movies of those writers"), or the end
    after_out = rules["s2-o-written-by"]
    assert after_out == '"\\n" "<END>" | "\\n3. " ("movies of those writers" s3-i-written-by)'
    # the last allowed step can only end
    assert rules["s3-o-written-by"] == '"\\n" "<END>"'
    with pytest.raises(ValueError):
        vocab.grammar([("no_such_relation", True)], 3)


def test_own_relations_get_a_generated_step_vocabulary(tmp_path):
    from kgqa.pipeline.relations import StepVocabulary

    own = tmp_path / "rel.toml"
    own.write_text(
        'subject_noun = "companies"\n[founded_by]\nnoun = "founders"\nverb = "founded by"\n'
        'out = ["who founded X"]\n',
        encoding="utf-8",
    )
    vocab = StepVocabulary(RelationPhrases.load(own), ["founded_by", "based_in"])
    assert vocab.key("companies founded by [Ada]") == ("founded_by", False)
    assert vocab.key("based in of those companies") == ("based_in", True)
    assert vocab.key("companies of those founders") == ("founded_by", False)
    _llama_grammar(vocab.grammar([("founded_by", False)], 2))
