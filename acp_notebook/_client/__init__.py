"""The client layer: ``Agent``, ``Session`` and ``Turn`` over a connection, the requests an agent
makes of a client (permission, questions, terminals, files) and the replay of a loaded session.
"""
