"""A real v1 agent that needs no key: pydantic-ai's TestModel behind pydantic-acp (pinned in the
``test`` extra). TestModel calls every tool once with dummy arguments, then answers a fixed text.

``add`` runs at once; ``delete_file`` needs approval (a v1 ``session/request_permission``) and,
when allowed, writes ``deleted.txt`` in the working directory, so a test can tell it ran.
"""

from __future__ import annotations

from pathlib import Path

from pydantic_acp import run_acp
from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

REPLY = "All done: I added and I deleted."

agent = Agent(TestModel(custom_output_text=REPLY), name="pydantic-test-agent")


@agent.tool_plain
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@agent.tool_plain(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (needs approval)."""
    Path("deleted.txt").write_text(f"deleted {path}\n")
    return f"deleted {path}"


if __name__ == "__main__":
    run_acp(agent=agent)
