"""A llama-server stand-in that hangs, started by a server recipe as its program (orch appends --host and
--port). `accept`: listens and takes connections, never answers (not even /health). `stall`: answers /health,
then starts every /completion stream and stops sending. `trickle`: answers /health, then sends every /completion
stream a byte at a time, no newline ever, each within any socket timeout. Real llama-server cannot be made to do
any of them on demand (test_server_hung.py also SIGSTOPs a real one)."""

import socket
import sys
import threading
import time


def trickle(conn: socket.socket) -> None:
    try:
        while True:
            conn.sendall(b"1\r\nx\r\n")  # one byte, as its own chunk
            time.sleep(0.2)
    except OSError:
        conn.close()  # the client went: so does this stream


mode = sys.argv[1]
port = int(sys.argv[sys.argv.index("--port") + 1])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(16)
print(f"hung_server {mode} listening on {port}", file=sys.stderr, flush=True)
held = []  # connections kept open and silent: the client waits on them
while True:
    conn, _ = srv.accept()
    request = conn.recv(65536) if mode in ("stall", "trickle") else b""
    if request.startswith(b"GET /health"):
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{"status":"ok"}')
        conn.close()
    elif request.startswith(b"POST /completion"):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b'data: {"content": "Once"}\n\n'
        conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        if mode == "trickle":
            threading.Thread(target=trickle, args=(conn,), daemon=True).start()
        held.append(conn)
    elif request:
        conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        conn.close()
    else:
        held.append(conn)
