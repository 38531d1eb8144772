"""The assembled server, the floor above HTTP, the console and MCP: the ASGI app that mounts
all three, the in-process stdio MCP host that runs that app, and the console screenshot tool.
"""
