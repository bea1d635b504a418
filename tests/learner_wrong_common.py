"""Shared by tests/learner_wrong_nb*.py."""
import textwrap


def W(source: str) -> str:
    return textwrap.dedent(source).strip("\n")
