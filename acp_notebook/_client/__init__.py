"""The client layer: ``connect()`` -> ``Agent`` -> ``Session`` -> ``Turn`` over one connection,
and what a client answers when an agent asks (permission, questions, v1 terminals and files).

Modules: ``_connect`` (``connect``, ``connect_streams``: open, initialize within a bound,
close), ``_agent`` (``Agent``: negotiation, sessions, what it answers when the agent asks),
``_session`` (``Session``: the reduced state, pending requests and the one fail-closed sweep),
``_turn`` (``Turn``: one prompt, its bounded updates), ``_errors`` (the client's typed errors),
``_v1`` (the v1 dialect ``Agent`` and ``Session`` delegate to; ``_protocol._v1`` translates its
traffic into the v2 models the rest reads), ``_permission`` and ``_elicitation`` (a request,
its handler or asker, the one answer written), ``_replay`` (bounded update buffers for late
iterators), ``_services`` with ``_terminals``, ``_files`` and ``_approval`` (a v1 agent's client
terminals and file system, behind approval).

The contract, for the layers above:

* **One event loop.** Everything here runs on the anyio loop that called ``connect``; nothing
  starts a thread. The notebook layer runs that loop on its I/O thread and crosses to it by
  its bridge; a view never touches a ``Session`` from another thread.
* **Order.** Updates are applied to ``Session.state`` (the pure reducer of ``_state``) in the
  order the agent wrote them, then handed to each ``Session.subscribe`` listener, in the order
  they subscribed, before the next line is read (notifications are awaited inline). A listener
  must not block; one that raises is logged and the next still runs.
* **Fail closed.** A permission request is answered by exactly one of: an asker (a card), the
  agent's handler, or ``cancelled``: with no handler, when the handler raises, answers an
  option not offered or nothing, and from ``session/cancel`` until the turn's idle. A question
  is answered ``cancel`` the same way. Nothing here approves on its own.
* **Bounds.** Lines are capped by the connection; updates for a session not yet opened are held
  up to ``EARLY_UPDATE_LIMIT``; a late iterator replays at most ``REPLAY_LIMIT`` updates and
  ``REPLAY_BULK_BYTES`` of bulk output; a terminal keeps its last 16 MiB (``_state``) and counts
  every byte. What is dropped is counted, never silently lost.
* **Errors carry fields.** Failures raise the typed errors of ``_connection._errors`` (and
  ``AuthenticationRequired``, ``TurnInProgress``, ``ProtocolViolation``,
  ``UnsupportedProtocolVersion`` here); no caller parses a message's wording.

May import: ``_protocol``, ``_connection``, ``_state`` (``tests/test_layers.py``).
"""
