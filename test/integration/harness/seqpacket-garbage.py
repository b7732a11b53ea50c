#!/usr/bin/env python3
"""Garbage for a SOCK_SEQPACKET unix socket (the background announcer's control socket).

usage: seqpacket-garbage.py SOCKET IDLE_CONNECTIONS

node:net cannot connect to SOCK_SEQPACKET, hence Python. One JSON line on
stdout per step, in this order:
  {"step": "random", "replies": [...]}    random bytes, one message per connection
  {"step": "huge", "bytes": N, "replies": [...]}  one message of 1 MiB
  {"step": "invalid", "replies": [...]}  invalid JSON, a NUL byte, JSON not an object, a bad record name
  {"step": "held", "connections": N}      IDLE_CONNECTIONS connected, sending nothing
then waits for a line on stdin, closes them all and prints {"step": "closed"}.
Each reply is the text received (null when the peer closed without one).
"""
import json
import os
import socket
import sys

SO_SNDBUFFORCE = 32  # <asm-generic/socket.h>; root may exceed wmem_max
REPLY_TIMEOUT_S = 10


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    return s


def ask(path, message):
    """Sends one message on a fresh connection; the reply text, or None if the peer closed without one."""
    with connect(path) as s:
        if len(message) > 200_000:
            s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, 4 * len(message))
        s.settimeout(REPLY_TIMEOUT_S)
        s.send(message)
        try:
            reply = s.recv(1 << 20)
        except ConnectionResetError:
            return None
        return reply.decode("utf-8", "replace") if reply else None


def say(obj):
    print(json.dumps(obj), flush=True)


def main():
    path, idle = sys.argv[1], int(sys.argv[2])
    rng = os.urandom
    say({"step": "random", "replies": [ask(path, rng(1 + n * 97 % 4096)) for n in range(20)]})
    huge = b'{"op":"status","pad":"' + b"a" * (1 << 20) + b'"}'
    say({"step": "huge", "bytes": len(huge), "replies": [ask(path, huge)]})
    say({"step": "invalid", "replies": [ask(path, m) for m in (b'{"op": "status", ', b"\x00", b"[]", b'{"op":"sync","record":"../x.json"}')]})
    held = [connect(path) for _ in range(idle)]
    say({"step": "held", "connections": len(held)})
    sys.stdin.readline()
    for s in held:
        s.close()
    say({"step": "closed"})


if __name__ == "__main__":
    main()
