#!/usr/bin/python3
"""A stand-in MCP server (Model Context Protocol, stdio transport: one JSON-RPC 2.0 message per
line) for the door's tools tests. Its tools: `echo` (returns `message`), `add` (returns a + b) and
`pid` (returns this process's id, so a test can tell one start from the next)."""
import json
import os
import sys
import time

TOOLS = [
    {"name": "echo", "description": "Returns the message it is given.",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}},
    {"name": "add", "description": "Adds two numbers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                     "required": ["a", "b"]}},
    {"name": "pid", "description": "This server's process id.", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "sleep", "description": "Answers after a while.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
]


def call(name, args):
    if name == "echo":
        return str(args.get("message", ""))
    if name == "add":
        return str(args.get("a", 0) + args.get("b", 0))
    if name == "pid":
        return str(os.getpid())
    if name == "sleep":
        time.sleep(float(args.get("seconds", 1)))
        return "slept"
    raise KeyError(name)


def answer(msg):
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2024-11-05"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": "kevlaya-mcp-echo", "version": "1"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        try:
            text = call(params.get("name"), params.get("arguments") or {})
        except KeyError as e:
            return {"content": [{"type": "text", "text": f"unknown tool {e}"}], "isError": True}
        return {"content": [{"type": "text", "text": text}], "isError": False}
    raise LookupError(method)


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "id" not in msg:
            continue  # a notification (notifications/initialized, ...): no answer
        try:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": answer(msg)}
        except LookupError as e:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": f"no method {e}"}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
