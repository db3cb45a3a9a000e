"""A llama-server stand-in that hangs, started by a server recipe as its program (orch appends --host and
--port). `accept`: listens and takes connections, never answers (not even /health). `stall`: answers /health,
then starts every /completion stream and stops sending. Real llama-server cannot be made to do either on demand
(test_server_hung.py also SIGSTOPs a real one)."""

import socket
import sys

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
    request = conn.recv(65536) if mode == "stall" else b""
    if request.startswith(b"GET /health"):
        conn.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{"status":"ok"}')
        conn.close()
    elif request.startswith(b"POST /completion"):
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b'data: {"content": "Once"}\n\n'
        conn.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        held.append(conn)
    elif request:
        conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        conn.close()
    else:
        held.append(conn)
