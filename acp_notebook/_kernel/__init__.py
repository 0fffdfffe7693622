"""The kernel as context and as tools: summaries of kernel objects for a prompt, and the MCP
server through which an agent reads (and, behind a card, runs) kernel code.
"""
