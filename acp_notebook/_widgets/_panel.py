"""The agent side panel: a kernel model whose front end lives in JupyterLab's right sidebar.

Creating an :class:`AgentPanel` is enough for the labextension to place its children in the
sidebar (the model does this itself when its comm opens; no ``display()`` is needed).  Without
the labextension (VS Code, plain IPython) the model is simply never rendered, and
:attr:`AgentPanel.rendered` stays False. The nbextension (the classic notebook) holds the model
but has no sidebar: it answers ``rendered`` with ``sidebar: false``, which sets
:attr:`AgentPanel.answered` but not :attr:`AgentPanel.rendered`.

Custom messages (typed in ``_protocols``), kernel -> front end, which acts on them and answers
nothing: ``scroll_to`` (show a notebook cell), ``copy`` (put text on the clipboard),
``download`` (save text as a file). Front end -> kernel: ``rendered``, once the panel's views
exist in some front end. ``show()`` is no message: it bumps a synced counter.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets  # type: ignore[import-untyped]
from traitlets import Instance, Int, Unicode

from ._protocols import PanelCopy, PanelDownload, PanelScrollTo, PanelToFrontEnd, read_panel_message
from ._version import MODULE_NAME, MODULE_VERSION


class AgentPanel(ipywidgets.DOMWidget):  # type: ignore[misc]
    """Children shown as a vertical stack in the right sidebar, with a pending-count badge."""

    _model_name = Unicode("AgentPanelModel").tag(sync=True)
    _model_module = Unicode(MODULE_NAME).tag(sync=True)
    _model_module_version = Unicode(MODULE_VERSION).tag(sync=True)
    _view_name = Unicode("AgentPanelView").tag(sync=True)
    _view_module = Unicode(MODULE_NAME).tag(sync=True)
    _view_module_version = Unicode(MODULE_VERSION).tag(sync=True)

    children = ipywidgets.widgets.trait_types.TypedTuple(trait=Instance(ipywidgets.Widget)).tag(
        sync=True, **ipywidgets.widget_serialization
    )
    title = Unicode("ACP agents").tag(sync=True)
    pending_count = Int(0).tag(sync=True)
    # Bumped by show(); the front end activates the sidebar tab whenever it changes.
    _show_requests = Int(0).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        #: a front end shows the panel in its sidebar
        self.rendered = False
        #: a front end with the extension's views holds the model (sidebar or not)
        self.answered = False
        #: the last front end that said so has a page without the extension's styles (VS Code)
        self.unstyled = False
        self._rendered_callbacks: list[Callable[[], None]] = []
        self.on_msg(self._handle_front_end_msg)

    def on_rendered(self, callback: Callable[[], None]) -> None:
        """Run ``callback()`` each time a front end with the extension's views (the labextension
        or the nbextension) says it holds the panel."""
        self._rendered_callbacks.append(callback)

    def show(self) -> None:
        """Ask every connected front end to open the panel."""
        self._show_requests += 1

    # -- kernel -> front end ------------------------------------------------------------------
    def scroll_to(self, cell_id: str | None, model_id: str | None) -> None:
        """Ask the front end to scroll the notebook to a cell (by id, or by a widget it shows)."""
        self._send_to_front_end(
            PanelScrollTo(type="scroll_to", cell_id=cell_id or "", model_id=model_id or "")
        )

    def copy_text(self, text: str) -> None:
        self._send_to_front_end(PanelCopy(type="copy", text=text))

    def download(self, filename: str, text: str) -> None:
        self._send_to_front_end(PanelDownload(type="download", filename=filename, text=text))

    def _send_to_front_end(self, content: PanelToFrontEnd) -> None:
        if self.comm is not None:
            self.send(content)

    def _handle_front_end_msg(self, _widget: Any, content: Any, _buffers: Sequence[Any]) -> None:
        message = read_panel_message(content)
        if message is not None:  # "rendered", the only one
            self.answered = True
            self.unstyled = message.get("unstyled", False)
            if message.get("sidebar", True):
                self.rendered = True
            for rendered in list(self._rendered_callbacks):
                rendered()

    # -- static output ------------------------------------------------------------------------
    def static_bundle(self) -> dict[str, str]:
        text = f"{self.title} (side panel): {len(self.children)} item(s)"
        if self.pending_count:
            text += f", {self.pending_count} pending"
        return {"text/plain": text}

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = super()._repr_mimebundle_(**kwargs)
        bundle.update(self.static_bundle())
        return bundle

    def __repr__(self) -> str:
        return self.static_bundle()["text/plain"]
