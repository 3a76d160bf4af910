"""Records every frame on every interface of the network namespace it runs in (a packet
socket, what tcpdump would see) into a file, until SIGTERM or a size bound.

usage: capture_frames.py OUT READY_FILE
"""
import signal
import socket
import sys

MAX_BYTES = 512 << 20
ETH_P_ALL = 3


def main(out_path, ready_path):
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sock.settimeout(0.2)
    total = 0
    with open(out_path, "wb") as out:
        with open(ready_path, "w") as ready:
            ready.write("ready\n")
        while not stopping and total < MAX_BYTES:
            try:
                frame = sock.recv(1 << 16)
            except socket.timeout:
                continue
            out.write(frame)
            total += len(frame)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
