"""A small MCP server (the official `mcp` server API) for the MCP proxy tests: one tool that
always fails the same way, one that pages through a document, one that asks the user (a message
tool: its replies differ every time), one that crashes the server mid-call, a resource and a prompt.

Every tool call is appended to the file named by $TINY_UPSTREAM_LOG, so a test can tell which
calls reached the upstream server.
"""

import json
import os

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("tiny-upstream", instructions="A tiny server for semloop's tests.", log_level="WARNING")


def _log(tool: str, arguments: dict) -> None:
    path = os.environ.get("TINY_UPSTREAM_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")


@server.tool()
def read_config(path: str) -> str:
    """Read a configuration file."""
    _log("read_config", {"path": path})
    raise ToolError(f"EACCES: permission denied, open '{path}'")


@server.tool()
def read_page(document: str, page: int) -> str:
    """Read one page of a document."""
    _log("read_page", {"document": document, "page": page})
    topics = ["installation", "configuration", "networking", "storage", "security", "monitoring",
              "upgrades", "troubleshooting", "glossary", "appendix"]
    topic = topics[page % len(topics)]
    return (f"{document}, page {page} of 10: {topic}.\n"
            f"This page covers {topic} step by step; section {page}.1 lists the {topic} options, "
            f"section {page}.2 shows {topic} examples for release {2020 + page}.")


_REPLIES = iter(["I don't have it with me, sorry.", "Let me check my email. Meanwhile I also want to add a bag.",
                 "Can't you look it up with my name?", "I really don't have it."])


@server.tool()
def ask_user(question: str) -> str:
    """Ask the user a question; each call gets the user's next reply."""
    _log("ask_user", {"question": question})
    return next(_REPLIES, "I don't know.")


@server.tool()
def crash(reason: str) -> str:
    """Exit the server process mid-call, with status $TINY_CRASH_STATUS (default 3)."""
    _log("crash", {"reason": reason})
    os._exit(int(os.environ.get("TINY_CRASH_STATUS", "3")))


@server.resource("notes://readme", description="The project's notes.")
def readme() -> str:
    return "Notes: the deploy key lives in the vault."


@server.prompt()
def summarize(topic: str) -> str:
    """Ask for a summary of a topic."""
    return f"Summarize what you know about {topic} in three sentences."


if __name__ == "__main__":
    server.run()
