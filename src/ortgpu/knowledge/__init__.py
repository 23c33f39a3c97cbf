"""The knowledge base shared by `explain` and `doctor`: ORT GPU failure modes with their messages, causes and fixes."""

from ortgpu.knowledge.base import (
    Example,
    FailureMode,
    Family,
    KnowledgeBase,
    KnowledgeBaseError,
    Severity,
    UnknownFailureModeError,
    load_knowledge_base,
    lookup,
)

__all__ = [
    "Example",
    "FailureMode",
    "Family",
    "KnowledgeBase",
    "KnowledgeBaseError",
    "Severity",
    "UnknownFailureModeError",
    "load_knowledge_base",
    "lookup",
]
