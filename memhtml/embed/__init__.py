"""The embedder seam: a Protocol, a registry by name, and the vector matrix sidecar.

Importing this package is cheap: the local model runtime (onnxruntime,
tokenizers), boto3 and numpy load only when an embedder or matrix is used.
"""

from memhtml.embed.base import Embedder, space_id
from memhtml.embed.registry import available, get_embedder, register, unregister

__all__ = ["Embedder", "available", "get_embedder", "register", "space_id", "unregister"]
