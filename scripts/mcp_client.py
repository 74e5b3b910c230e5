"""Drives `rewind mcp` with the real MCP client (the `mcp` package from PyPI).

    python3 scripts/mcp_client.py REWIND TRANSCRIPT [--exchange FILE]

Starts `REWIND mcp` in a scratch folder holding a copy of TRANSCRIPT (as `session.jsonl`),
initialises, lists the tools and calls each of them once, plus one call that must fail; prints
what it saw as one JSON document on standard output for tests/mcp_client.rs to check. With
`--exchange FILE`, the raw JSON-RPC lines both ways are written to FILE (`>` from the client,
`<` from the server): docs/mcp.md shows such an exchange.
"""

import argparse
import asyncio
import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(model):
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


CALLS = [
    ("rules", {}),
    ("explain", {"rule": "tool-never-finished"}),
    ("sessions", {"store": "session.jsonl"}),
    ("request", {"store": "session.jsonl"}),
    ("diagnose", {"paths": ["session.jsonl"]}),
    ("repair", {"store": "session.jsonl"}),
    ("diagnose", {"paths": ["missing.log"]}),
]


async def drive(rewind, folder, exchange):
    if exchange:
        # The server behind two tees: what goes in and what comes out, line by line.
        script = (
            f"tee {shlex.quote(exchange + '.in')} | {shlex.quote(rewind)} mcp"
            f" | tee {shlex.quote(exchange + '.out')}"
        )
        params = StdioServerParameters(command="sh", args=["-c", script], cwd=folder)
    else:
        params = StdioServerParameters(command=rewind, args=["mcp"], cwd=folder)
    store = os.path.join(folder, "session.jsonl")
    report = {"calls": []}
    async with stdio_client(params) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            init = dump(await session.initialize())
            report["protocolVersion"] = init["protocolVersion"]
            report["serverInfo"] = init["serverInfo"]
            report["capabilities"] = init["capabilities"]
            tools = dump(await session.list_tools())
            report["tools"] = [
                {
                    "name": t["name"],
                    "readOnlyHint": t.get("annotations", {}).get("readOnlyHint"),
                    "inputSchema": t["inputSchema"],
                }
                for t in tools["tools"]
            ]
            for name, arguments in CALLS:
                before = digest(store)
                result = dump(await session.call_tool(name, arguments))
                report["calls"].append(
                    {
                        "tool": name,
                        "arguments": arguments,
                        "isError": result.get("isError", False),
                        "structuredContent": result.get("structuredContent"),
                        "text": [c.get("text") for c in result.get("content", [])],
                        "storeUnchanged": digest(store) == before,
                    }
                )
    return report


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("rewind")
    parser.add_argument("transcript")
    parser.add_argument("--exchange")
    args = parser.parse_args()
    rewind = os.path.abspath(args.rewind)
    exchange = os.path.abspath(args.exchange) if args.exchange else None
    with tempfile.TemporaryDirectory(prefix="rewind-mcp-") as folder:
        shutil.copy(args.transcript, os.path.join(folder, "session.jsonl"))
        report = asyncio.run(drive(rewind, folder, exchange))
    if exchange:
        with open(exchange, "w") as out:
            for mark, suffix in ((">", ".in"), ("<", ".out")):
                with open(exchange + suffix) as f:
                    for line in f:
                        out.write(f"{mark} {line}")
                os.remove(exchange + suffix)
    json.dump(report, sys.stdout)
    print()


if __name__ == "__main__":
    main()
