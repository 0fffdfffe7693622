"""Start a browser test's Jupyter server: ``python serve.py APP ARGS...`` as
``jupyter APP ARGS...`` would, without ``rfc3987_syntax`` and without asking yarn for its
configuration. APP is ``lab`` or ``nbclassic`` (playwright.config.js's webServer),
``kernelgateway`` (tests/test_browser.py's gateway server) or ``notebook`` (panel.spec.ts's
Notebook 7).

Installed with jsonschema's format checkers (jupyter-events asks for them), rfc3987-syntax
builds a Lark grammar for IRIs when it is imported: 1.3 of the 2.1 CPU-seconds that
``import jupyterlab.labapp`` costs, in each server (and the gateway spec's Kernel
Gateway), only to check ``"format": "iri"`` in JSON schemas. jsonschema imports it only if it
can (an ImportError leaves that format unchecked, as where the package is not installed), and
no browser test depends on it.

Importing ``jupyterlab.labapp`` (or ``notebook.app``) also runs ``node yarn.js config --json``
(``get_app_version()`` at import: the default registry comes from yarn's configuration), 0.4
CPU-s. These servers install nothing, so that configuration is left empty: the default
registry, as where node is not installed.
"""

import sys

# None in sys.modules: `import rfc3987_syntax` raises ImportError
sys.modules["rfc3987_syntax"] = None  # type: ignore[assignment]

if __name__ == "__main__":
    if sys.argv[1] in ("lab", "notebook"):
        import jupyterlab.commands

        def _no_yarn_config(logger: object) -> dict[str, dict[str, object]]:
            return {"yarn config": {}, "npm config": {}}

        if hasattr(jupyterlab.commands, "_yarn_config"):
            jupyterlab.commands._yarn_config = _no_yarn_config
    app = sys.argv.pop(1)
    if app == "lab":
        from jupyterlab.labapp import main
    elif app == "nbclassic":
        from nbclassic.notebookapp import main
    elif app == "notebook":
        from notebook.app import main
    elif app == "kernelgateway":
        from kernel_gateway import launch_instance as main
    else:
        raise SystemExit(f"serve.py: no server named {app!r}")
    sys.exit(main())
