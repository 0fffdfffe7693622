"""Start a browser-test group's Jupyter server: ``python serve.py APP ARGS...`` as
``jupyter APP ARGS...`` would, without ``rfc3987_syntax``. APP is ``lab`` or ``nbclassic``
(playwright.config.js's webServer) or ``kernelgateway`` (tests/test_browser.py's gateway group).

Installed with jsonschema's format checkers (jupyter-events asks for them), rfc3987-syntax
builds a Lark grammar for IRIs when it is imported: 1.3 of the 2.1 CPU-seconds that
``import jupyterlab.labapp`` costs, in each group's server (and the gateway group's Kernel
Gateway), only to check ``"format": "iri"`` in JSON schemas. jsonschema imports it only if it
can (an ImportError leaves that format unchecked, as where the package is not installed), and
no browser test depends on it.
"""

import sys

# None in sys.modules: `import rfc3987_syntax` raises ImportError
sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]

if __name__ == "__main__":
    app = sys.argv.pop(1)
    if app == "lab":
        from jupyterlab.labapp import main
    elif app == "nbclassic":
        from nbclassic.notebookapp import main
    elif app == "kernelgateway":
        from kernel_gateway import launch_instance as main
    else:
        raise SystemExit(f"serve.py: no server named {app!r} (lab, nbclassic or kernelgateway)")
    sys.exit(main())
