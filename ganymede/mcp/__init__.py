"""``ganymede mcp``: the MCP door to the agent core of a running server, and its companions
``mcp watch`` and ``mcp changes``. All agent state lives in the server; this is a thin door."""
