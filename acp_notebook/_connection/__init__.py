"""The connection layer: newline-delimited JSON-RPC over byte streams, the agent process and its
supervisor, typed errors. Plain dicts and anyio; no models, no widgets.
"""
