# A jupyter_server config for a JupyterLab (or Notebook 7) server whose kernels run behind a
# gateway (--GatewayClient.url): add these lines to the server's jupyter_server_config.py.
#
# They fix one bug of jupyter_server's gateway relay (seen with 2.21.1, the newest on PyPI on
# 2026-12-04); docs/gateway-relay.md ("An abandoned upstream websocket") has the whole story.
# In short: when the browser's kernel websocket closes while the relay is still opening its own
# websocket to the gateway, the relay forgets that websocket instead of closing it. JupyterLab's
# first kernel websocket always does this through a gateway (the relay answers with no
# subprotocol, so the browser fails it and reconnects at once, with the same session id). A
# Kernel Gateway tolerates the forgotten websocket; Enterprise Gateway 3.3.0 (jupyter_server
# 1.24) makes the reconnect wait until it closes, which it never does: the kernel's first
# connection fails after GatewayClient's request timeout (42 s by default) and JupyterLab never
# sees the kernel ready.
#
# The fix: a websocket that opens after the browser has left is closed as soon as it opens.

from jupyter_server.gateway.connections import GatewayWebSocketConnection


class GatewayRelayClosingLateSockets(GatewayWebSocketConnection):
    """The gateway relay, closing the gateway's websocket when it opens after a disconnect."""

    def disconnect(self):
        self.disconnected = True
        if self.ws is not None:
            self.ws.close()
        elif self.ws_future is not None and not self.ws_future.done():
            # not cancel(): that leaves the connection it would have given open and unowned
            self.ws_future.add_done_callback(_close_when_open)


def _close_when_open(future):
    if not future.cancelled() and future.exception() is None:
        future.result().close()


c = get_config()  # noqa: F821 (given by the config loader)
c.ServerApp.kernel_websocket_connection_class = GatewayRelayClosingLateSockets
