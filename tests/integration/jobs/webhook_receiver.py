#!/usr/bin/env python3
"""webhook_receiver.py: an HTTP server on loopback that takes Alertmanager's
webhook notifications and appends each POST body, one JSON document per
line, to OUT. Writes the port it listens on to OUT.port once ready.

Exists for trainwatch's Alertmanager integration test: Alertmanager sends
grouped notifications here, and the test reads what arrived.

usage: /usr/bin/python3 webhook_receiver.py OUT
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[1], "a") as out:
            out.write(json.dumps(json.loads(body)) + "\n")
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    port_file = sys.argv[1] + ".port"
    with open(port_file + ".tmp", "w") as out:
        out.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
