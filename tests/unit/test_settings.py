from pathlib import Path

import pytest

from kgqa.errors import ConfigError
from kgqa.settings import as_dict, load_settings

pytestmark = pytest.mark.unit


def test_defaults_without_env_or_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = load_settings(env={"HOME": str(tmp_path)})
    assert s.neo4j.managed
    assert s.neo4j.effective_uri == "bolt://127.0.0.1:7687"
    assert s.retrieval.hops == 3 and s.retrieval.top_k == 30
    assert s.llm.temperature == 0.3 and s.llm.top_k == 40 and s.llm.min_p == 0.05


def test_precedence_cli_over_env_over_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kgqa.toml").write_text(
        '[retrieval]\ntop_k = 10\nhops = 2\n[neo4j]\nuri = "bolt://file:7687"\n'
    )
    env = {"HOME": str(tmp_path), "KGQA_RETRIEVAL_TOP_K": "20", "NEO4J_PASSWORD": "pw"}
    s = load_settings({"retrieval.top_k": 5}, env=env)
    assert s.retrieval.top_k == 5  # CLI
    assert s.retrieval.hops == 2  # file
    assert s.neo4j.uri == "bolt://file:7687" and not s.neo4j.managed
    assert s.neo4j.password == "pw"  # env alias
    assert load_settings(env=env).retrieval.top_k == 20  # env over file


def test_neo4j_env_aliases_and_model_shortcut(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {
        "HOME": str(tmp_path),
        "NEO4J_URI": "neo4j://db:7687",
        "NEO4J_USERNAME": "alice",
        "KGQA_MODEL": "/m/x.gguf",
    }
    s = load_settings(env=env)
    assert (s.neo4j.uri, s.neo4j.user, s.llm.model) == ("neo4j://db:7687", "alice", "/m/x.gguf")


def test_unknown_setting_and_bad_value_are_one_line_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="unknown setting 'retrieval.topk'"):
        load_settings({"retrieval.topk": 3}, env={"HOME": str(tmp_path)})
    with pytest.raises(ConfigError, match="retrieval.top_k: 'many' is not a valid int"):
        load_settings(env={"HOME": str(tmp_path), "KGQA_RETRIEVAL_TOP_K": "many"})
    with pytest.raises(ConfigError, match="does not exist"):
        load_settings(config=tmp_path / "nope.toml", env={"HOME": str(tmp_path)})


def test_paths_and_password_hidden(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = load_settings({"data_dir": "~/kg"}, env={"HOME": str(tmp_path), "NEO4J_PASSWORD": "x"})
    assert isinstance(s.data_dir, Path)
    assert s.index_dir == s.data_dir / "index" / "neo4j"
    assert as_dict(s)["neo4j"]["password"] == "***"


def test_a_bool_setting_refuses_a_word_that_is_not_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = {"HOME": str(tmp_path), "KGQA_LLM_PROMPT_STATES": "off"}
    assert load_settings(env=env).llm.prompt_states is False
    with pytest.raises(ConfigError, match="true or false"):
        load_settings(env={"HOME": str(tmp_path), "KGQA_LLM_PROMPT_STATES": "sometimes"})
