# A jupyter_server config for a JupyterLab (or Notebook 7) server whose kernels run behind a
# gateway (--GatewayClient.url): add these lines to the server's jupyter_server_config.py.
#
# They work around two faults of jupyter_server's gateway relay (seen with 2.21.1, the newest on
# PyPI on 2026-12-06) that hang a new kernel's first connection; docs/gateway-relay.md has the
# whole story. In short: JupyterLab's first kernel websocket offers the v1 kernel subprotocol.
# The relay speaks only the legacy protocol and answers with none, so the browser fails that
# handshake and connects again at once, with the same session id and no subprotocol. The relay
# had already opened a websocket to the gateway for the first one, and it forgets it instead of
# closing it. The gateway then has two websockets for one session:
# - behind Enterprise Gateway 3.3.0 (jupyter_server 1.24) the second waits for the first to
#   close, which it never does: the kernel stays "Connecting";
# - behind Kernel Gateway 3.0.1 both open, each with the session id as its ZeroMQ identity. The
#   kernel's sockets hand an identity to its latest connection (ROUTER_HANDOVER), so when the
#   forgotten one connects last the browser's requests go unanswered: the kernel showed
#   "Unknown" for good in one of five runs of the browser test on a loaded machine.
#
# The fix, in two parts:
# - a handshake that offers only subprotocols the relay does not speak is refused before the
#   relay connects to the gateway (the browser would fail it anyway; JupyterLab connects again
#   without one). The server logs a 400 warning for each: that is this refusal;
# - a websocket to the gateway that opens after the browser has left is closed as it opens.

from jupyter_server.gateway.connections import GatewayWebSocketConnection
from tornado import web


class GatewayRelayClosingLateSockets(GatewayWebSocketConnection):
    """The gateway relay: no websocket to the gateway for a handshake the browser will fail, and
    none left open after the browser has gone."""

    async def prepare(self):
        # (the handler calls this before it answers the handshake; an error here is the answer)
        header = self.websocket_handler.request.headers.get("Sec-WebSocket-Protocol", "")
        offered = [name.strip() for name in header.split(",") if name.strip()]
        # (what the handler would answer: none of them, unless kernel_ws_protocol is set to one)
        if offered and self.websocket_handler.select_subprotocol(offered) is None:
            raise web.HTTPError(
                400,
                f"the gateway relay speaks none of {', '.join(offered)}:"
                " connect without a subprotocol",
            )

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
