"""The vector index of embedded triples, keyed by triple id (FAISS), and its sync with a KB.

Nothing heavy is imported here: FAISS loads when an index is opened or created.
"""

from kgqa.index.faiss_index import Manifest, TopK, VectorIndex, kb_fingerprint

__all__ = ["Manifest", "TopK", "VectorIndex", "kb_fingerprint"]
