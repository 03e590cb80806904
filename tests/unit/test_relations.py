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
