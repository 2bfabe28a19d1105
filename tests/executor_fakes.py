"""An agent body for tests/test_executor.py that dies, on cue, in the middle of a unit (as an agent whose GPU
fell off the bus does): importable by the spawned agent process (pytest puts tests/ on sys.path, and spawn
passes sys.path on)."""

import os

from solbench.executor.local import agent_main

DIE_ON = "SOLBENCH_TEST_AGENT_DIES_ON"
"""'<label>:<scenario id substring>': the agent of that GPU label exits when sent a matching scenario."""


def dying_agent(conn, ctx, label):
    label_dies, _, fragment = os.environ.get(DIE_ON, ":").partition(":")

    class Conn:
        def recv(self):
            message = conn.recv()
            if message[0] == "unit" and label == label_dies and fragment in message[1].id:
                os._exit(9)
            return message

        def send(self, message):
            conn.send(message)

    agent_main(Conn(), ctx, label)
