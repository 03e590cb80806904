"""What the ONNX export must reproduce, read from a sentence-transformers folder, and what it
refuses (kgqa.embed.onnx._pipeline_config; the export itself: tests/e2e/test_embed_onnx.py)."""

import json

import pytest

from kgqa.embed.onnx import _model_key, _pipeline_config
from kgqa.errors import ConfigError, ModelNotFound
from kgqa.factory import Factory
from kgqa.settings import load_settings


def _folder(tmp_path, modules, pooling=None, max_len=128):
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": max_len}))
    if pooling is not None:
        (tmp_path / "1_Pooling").mkdir()
        (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return tmp_path


TRANSFORMER = {"idx": 0, "path": "", "type": "sentence_transformers.models.Transformer"}
POOLING = {"idx": 1, "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}
NORMALIZE = {"idx": 2, "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}


def test_mean_pooling_and_normalize_as_minilm_has_them(tmp_path):
    folder = _folder(
        tmp_path,
        [TRANSFORMER, POOLING, NORMALIZE],
        {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False},
    )
    assert _pipeline_config(folder) == {"pooling": "mean", "normalize": True, "max_seq_length": 128}


def test_cls_pooling_without_normalize(tmp_path):
    folder = _folder(tmp_path, [TRANSFORMER, POOLING], {"pooling_mode_cls_token": True})
    assert _pipeline_config(folder)["pooling"] == "cls"
    assert _pipeline_config(folder)["normalize"] is False


@pytest.mark.parametrize(
    "modules, pooling, says",
    [
        ([TRANSFORMER, POOLING], {"pooling_mode_max_tokens": True}, "pooling"),
        ([TRANSFORMER, {"type": "sentence_transformers.models.Dense", "path": "2"}], None, "Dense"),
        ([POOLING], {"pooling_mode_mean_tokens": True}, "modules"),
    ],
)
def test_a_pipeline_it_cannot_reproduce_is_refused_in_one_line(tmp_path, modules, pooling, says):
    folder = _folder(tmp_path, modules, pooling)
    with pytest.raises(ModelNotFound, match=says) as e:
        _pipeline_config(folder)
    assert "embed.backend = torch" in str(e.value) and "\n" not in str(e.value)


def test_the_export_is_made_again_when_the_models_files_change(tmp_path):
    folder = _folder(tmp_path, [TRANSFORMER])
    before = _model_key(folder)
    assert _model_key(folder) == before
    (folder / "model.safetensors").write_bytes(b"new weights")
    assert _model_key(folder) != before


def test_an_unknown_backend_is_a_config_error_naming_the_setting(tmp_path):
    settings = load_settings({"embed.backend": "tensorflow"}, env={})
    with Factory(settings) as f, pytest.raises(ConfigError, match="embed.backend"):
        f.embedder()
