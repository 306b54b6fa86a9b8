"""The language-model seam: a Protocol, a registry by name, and a budgeted, retrying caller.

Importing this package is cheap: boto3 loads only when the Bedrock model makes
its first call, and the OpenAI-compatible backend uses the standard library.
"""

from memhtml.llm.base import (
    Answer,
    BudgetExhausted,
    CallBudget,
    Model,
    ModelCaller,
    Refused,
    frame_as_data,
    frame_batch,
    offer_keys,
    resolve_keys,
)
from memhtml.llm.registry import available, get_model, register, unregister

__all__ = [
    "Answer",
    "BudgetExhausted",
    "CallBudget",
    "Model",
    "ModelCaller",
    "Refused",
    "available",
    "frame_as_data",
    "frame_batch",
    "get_model",
    "offer_keys",
    "register",
    "resolve_keys",
    "unregister",
]
