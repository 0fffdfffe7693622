"""The package's version, for the layers that name it (the client to agents, the embedded agent
to clients) without the package metadata's lookup (importlib.metadata scans every installed
distribution: about 20 ms of each agent's start). pyproject.toml's ``version`` is the same
(tests/test_version.py checks it against the installed metadata)."""

__version__ = "0.1.0"
