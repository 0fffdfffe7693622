"""Front-end module name and version shared by every widget model of the labextension."""

from __future__ import annotations

#: npm package name of ``labextension/`` (also the widget model module).
MODULE_NAME = "acp-notebook"
#: semver range the front end's registered version (``package.json`` ``version``) must satisfy.
MODULE_VERSION = "^0.1.0"
