"""The same sentence-transformers model run by ONNX Runtime, without torch in the process.

Importing sentence-transformers (torch, transformers) and loading the model costs ~7 s of
every new ``kgqa ask`` on 2 cores; ONNX Runtime and ``tokenizers`` import in ~0.15 s. The
model is exported once, with its pooling and normalisation inside the graph, into
``<cache_dir>/embed-onnx/<model>-<key>/model.onnx`` (the export needs torch, transformers and
onnx, ~6 s), and then read by every process. The vectors are the float32 model's (cosine
1.00000 on MetaQA triples, docs/benchmarks.md), so an index built by either backend serves
the other: the embedder's ``name`` is the model's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kgqa.embed.sentence_transformers import cpu_count, embed_sorted, resolve_model
from kgqa.errors import ModelNotFound

log = logging.getLogger(__name__)

# The graph's inputs and output, fixed here and by the export.
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def onnx_available() -> bool:
    """ONNX Runtime and the fast tokenizer are importable."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("onnxruntime", "tokenizers"))


class OnnxEmbedder:
    """Implements :class:`kgqa.embed.base.Embedder` with ONNX Runtime on CPU.

    Same model names and folders as :class:`~kgqa.embed.sentence_transformers.
    SentenceTransformerEmbedder`; only models made of a BERT-style transformer, mean or CLS
    pooling and an optional normalisation are exported (others: ``embed.backend = "torch"``).
    """

    precision = "float32"

    def __init__(self, model: str, cache_dir: Path, batch_size: int = 256):
        resolved = resolve_model(model)
        self.name = resolved.name
        self.path = resolved.path
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self._dim = resolved.dim
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.warm_up()
        assert self._dim is not None
        return self._dim

    @property
    def onnx_path(self) -> Path:
        """Where this model's export lives (it may not exist yet)."""
        return (
            self.cache_dir
            / "embed-onnx"
            / f"{_slug(self.name)}-{_model_key(self.path)}"
            / ("model.onnx")
        )

    def warm_up(self) -> None:
        """Export the model if this cache has no export yet, then open it (once)."""
        if self._session is not None:
            return
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:
            raise ModelNotFound(
                "embed.backend onnx needs onnxruntime and tokenizers: pip install onnxruntime"
            ) from e
        config = _pipeline_config(self.path)
        path = self.onnx_path
        if not path.is_file():
            export_onnx(self.path, path, config)
        try:
            tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
        except Exception as e:  # tokenizers raises its own Exception type
            raise ModelNotFound(f"cannot read {self.path / 'tokenizer.json'}: {e}") from e
        tokenizer.enable_truncation(config["max_seq_length"])
        tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = cpu_count()
        options.inter_op_num_threads = 1
        try:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime's own error types
            raise ModelNotFound(
                f"cannot open the ONNX export {path} ({e}); delete it to export again"
            ) from e
        dim = int(session.get_outputs()[0].shape[-1])
        if self._dim is not None and dim != self._dim:
            raise ModelNotFound(f"{path} gives {dim}-d vectors, expected {self._dim}")
        self._dim = dim
        self._tokenizer = tokenizer
        self._session = session

    def embed(
        self, texts: Sequence[str], batch_size: int | None = None, progress: bool = False
    ) -> np.ndarray:
        self.warm_up()
        return embed_sorted(texts, self.dim, batch_size or self.batch_size, self._encode, progress)

    def _encode(self, batch: list[str]) -> np.ndarray:
        encoded = self._tokenizer.encode_batch(batch)
        ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        types = np.array([e.type_ids for e in encoded], dtype=np.int64)
        feed = dict(zip(_INPUTS, (ids, mask, types), strict=True))
        return np.asarray(self._session.run(None, feed)[0], dtype=np.float32)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(name).name)[:60]


def _model_key(path: Path) -> str:
    """Changes when the model's files change (their names, sizes and modification times)."""
    parts = []
    for f in sorted(path.rglob("*")):
        if f.is_file() and not f.name.startswith("."):
            stat = f.stat()
            parts.append([str(f.relative_to(path)), stat.st_size, stat.st_mtime_ns])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def _pipeline_config(path: Path) -> dict[str, Any]:
    """What the export must reproduce: the modules after the transformer, read from the
    sentence-transformers folder; a pipeline it cannot reproduce is refused in one line."""

    def read(name: str) -> Any:
        try:
            return json.loads((path / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    modules = read("modules.json") or []
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    pooling = "mean"
    for m in modules:
        if m.get("type", "").endswith(".Pooling"):
            cfg = read(f"{m.get('path', '')}/config.json") or {}
            modes = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v]
            if modes == ["pooling_mode_cls_token"]:
                pooling = "cls"
            elif modes not in ([], ["pooling_mode_mean_tokens"]):
                raise ModelNotFound(
                    f"{path}: pooling {modes} has no ONNX export here; set embed.backend = torch"
                )
    unknown = [k for k in kinds if k not in ("Transformer", "Pooling", "Normalize")]
    if unknown or (kinds and kinds[0] != "Transformer"):
        raise ModelNotFound(
            f"{path}: modules {kinds} have no ONNX export here; set embed.backend = torch"
        )
    st_config = read("sentence_bert_config.json") or {}
    return {
        "pooling": pooling,
        "normalize": "Normalize" in kinds,
        "max_seq_length": int(st_config.get("max_seq_length") or 512),
    }


def export_onnx(model_dir: Path, out: Path, config: dict[str, Any] | None = None) -> None:
    """Export the transformer with its pooling and normalisation as one ONNX graph whose
    output is the sentence vector; written atomically (a half-written export is never read)."""
    cfg = config or _pipeline_config(model_dir)
    log.warning("exporting embedding model %s to ONNX, once: %s", model_dir.name, out)
    try:
        import torch
        from transformers import AutoModel
    except ImportError as e:
        raise ModelNotFound(
            f"no ONNX export of {model_dir} in the cache, and exporting one needs torch and "
            "transformers (pip install -e '.[ml]'), or set embed.backend = torch"
        ) from e
    try:
        import onnx  # noqa: F401  (torch's exporter serialises through it)
    except ImportError as e:
        raise ModelNotFound(
            "exporting the embedding model to ONNX needs onnx: pip install onnx"
        ) from e

    class _Sentence(torch.nn.Module):
        def __init__(self, model: Any):
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            if cfg["pooling"] == "cls":
                vector = hidden[:, 0]
            else:
                weight = attention_mask.unsqueeze(-1).to(hidden.dtype)
                vector = (hidden * weight).sum(1) / weight.sum(1).clamp(min=1e-9)
            if cfg["normalize"]:
                vector = torch.nn.functional.normalize(vector, p=2, dim=1)
            return vector

    model = AutoModel.from_pretrained(str(model_dir))
    model.eval()
    ids = torch.tensor([[1, 5, 6, 2], [1, 5, 2, 0]])  # shapes only: traced, then dynamic
    example = (ids, (ids > 0).long(), torch.zeros_like(ids))
    axes = {name: {0: "batch", 1: "tokens"} for name in _INPUTS}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        with torch.no_grad():
            torch.onnx.export(
                _Sentence(model),
                example,
                str(tmp),
                input_names=list(_INPUTS),
                output_names=["sentence_embedding"],
                dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
                opset_version=17,
                dynamo=False,
            )
        os.replace(tmp, out)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
