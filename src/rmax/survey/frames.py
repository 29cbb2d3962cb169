"""The frames in which each node's worker (node_worker.py) sends its result back through the
launcher, and their reassembly, one result per rank.

The output of every rank reaches rmax through one pipe (mpirun's, srun's), and a launcher forwards
what it reads from a rank in reads of its own size, so two ranks' long lines could be cut into each
other. A frame is therefore exactly FRAME bytes, newline included, written with one write(2), which
names its rank and host and carries a CRC: a damaged frame is dropped, never misread. Frames go on
stderr: Open MPI 4.1 gives a rank's stdout a pseudo-terminal, which damaged its output at about
every 4 KiB (a byte lost or moved: 16 of 16 results of 60 KB broken, 16 nodes), where stderr, a
pipe, came through whole (0 of 16). Against other launchers' damage, the worker also writes a blank
frame at the end of each 4 KiB of its output (stream()), a line holding two frames is read as both,
and every frame is sent twice; a result still missing a frame is reported lost, never parsed.
Stdlib only: the worker imports this on every node at start-up."""

from __future__ import annotations

import base64
import json
import zlib

MAGIC = "RMXF1"
FRAME = 512          # bytes per frame, newline included; a power of two no larger than PIPE_BUF (4096)
BLOCK = 4096         # the forwarding's unit: the last frame of each block of a rank's output is blank
BLANK = b" " * (FRAME - 1) + b"\n"
COPIES = 2


def encode(rank: int, host: str, result: dict) -> list[bytes]:
    """result (a JSON object) as frames: "RMXF1 CRC RANK HOST SEQ LAST PAYLOAD" padded to FRAME bytes."""
    data = base64.b64encode(zlib.compress(json.dumps(result).encode())).decode()
    head = f"{rank} {host}"
    room = FRAME - 1 - len(f"{MAGIC} 00000000 {head} 0000000 0 ")
    if room < 64:
        raise ValueError(f"host name too long for a frame: {host[:40]}...")
    chunks = [data[i:i + room] for i in range(0, len(data), room)]   # never empty: zlib writes a header
    frames = []
    for seq, chunk in enumerate(chunks):
        body = f"{head} {seq:07d} {int(seq == len(chunks) - 1)} {chunk}"
        line = f"{MAGIC} {zlib.crc32(body.encode()):08x} {body}"
        frames.append(line.ljust(FRAME - 1).encode() + b"\n")
    return frames


def stream(frames: list[bytes]) -> list[bytes]:
    """What the worker writes: the frames COPIES times, a blank frame at the end of every BLOCK."""
    out: list[bytes] = []
    for f in frames * COPIES:
        while (len(out) + 1) % (BLOCK // FRAME) == 0:
            out.append(BLANK)
        out.append(f)
    return out


def _frame(line: str) -> tuple[int, str, int, bool, str] | None:
    """(rank, host, seq, last, chunk) of one whole, intact frame, else None."""
    parts = line.rstrip().split(" ")
    if len(parts) != 6:
        return None
    crc, rank, host, seq, last, chunk = parts
    body = " ".join(parts[1:])
    try:
        if int(crc, 16) != zlib.crc32(body.encode()):
            return None
        return int(rank), host, int(seq), last == "1", chunk
    except ValueError:
        return None


def decode(text: str) -> tuple[dict[int, dict], dict[int, str]]:
    """The results in a job's output by rank, and the hosts of ranks whose result came in part only
    (a frame lost or cut: rank -> host). Lines that are no frame (a launcher's own) are ignored."""
    got: dict[int, dict] = {}
    for line in text.splitlines():
        # a line may hold several frames (a newline lost) or the rest of one cut: each is tried
        for f in map(_frame, line.split(MAGIC + " ")[1:]):
            if f is None:
                continue
            rank, host, seq, last, chunk = f
            r = got.setdefault(rank, {"host": host, "chunks": {}, "count": None})
            r["chunks"][seq] = chunk
            if last:
                r["count"] = seq + 1
    results, broken = {}, {}
    for rank, r in got.items():
        if r["count"] is None or len(r["chunks"]) != r["count"]:
            broken[rank] = r["host"]
            continue
        try:
            data = "".join(r["chunks"][i] for i in range(r["count"]))
            results[rank] = json.loads(zlib.decompress(base64.b64decode(data)))
        except (ValueError, KeyError, zlib.error):
            broken[rank] = r["host"]
    return results, broken
