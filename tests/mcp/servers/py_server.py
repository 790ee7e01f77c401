"""A small MCP server on PyPI's `mcp` package (the Python SDK): a second
implementation next to the npm servers. Tools: add, shout."""
from mcp.server.mcpserver import MCPServer

server = MCPServer("alcove-test-py")


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def shout(text: str) -> str:
    """Returns the text in capitals."""
    return text.upper()


if __name__ == "__main__":
    server.run()
