"""A pytest plugin loaded before all others (``-p tests._startup`` in pyproject.toml's addopts):
it runs before pytest imports the plugins it finds by their entry points.

nbval's plugin imports nbformat, which imports jsonschema, whose format checkers import
``rfc3987_syntax`` when it is installed (jupyter-events asks for jsonschema's format extras): that
module builds a Lark grammar for IRIs as it is imported, 1.1 CPU-s in every pytest process (the
run's, each of its workers', and each pytest a test starts), only to check ``"format": "iri"``.
Nothing here validates with format checks (neither the package nor the tests make a
``FormatChecker``), so it is not imported: jsonschema then leaves those formats unchecked, as where
the package is not installed. ui-tests/serve.py does the same for the browser tests' servers.
"""

import sys

# None in sys.modules: `import rfc3987_syntax` raises ImportError
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
