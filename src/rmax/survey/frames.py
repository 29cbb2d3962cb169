"""The frames in which each node's worker (node_worker.py) sends its results back through the
launcher, one result per step of its plan, and their reassembly, one result per rank and step.

The output of every rank reaches rmax through one pipe (mpirun's, srun's), and a launcher forwards
what it reads from a rank in reads of its own size, so two ranks' long lines could be cut into each
other. A frame is therefore exactly FRAME bytes, newline included, written with one write(2), which
names its rank, host and step and carries a CRC: a damaged frame is dropped, never misread. Frames go on
stderr: Open MPI 4.1 gives a rank's stdout a pseudo-terminal, which damaged its output at about
every 4 KiB (a byte lost or moved: 16 of 16 results of 60 KB broken, 16 nodes), where stderr, a
pipe, came through whole (0 of 16). Against other launchers' damage, the worker also writes a blank
frame at the end of each 4 KiB of its output (stream()), a line holding two frames is read as both,
and every frame is sent twice; a result still missing a frame is reported lost, never parsed.
Results are reassembled as their frames arrive (Reassembly), so that a step's results are stored
while the node runs its next step.
Stdlib only: the worker imports this on every node at start-up."""

from __future__ import annotations

import base64
import json
import zlib

MAGIC = "RMXF2"
FRAME = 512          # bytes per frame, newline included; a power of two no larger than PIPE_BUF (4096)
BLOCK = 4096         # the forwarding's unit: the last frame of each block of a rank's output is blank
BLANK = b" " * (FRAME - 1) + b"\n"
COPIES = 2

Key = tuple[int, int]   # (rank, step): the step's index in the worker's plan


def encode(rank: int, host: str, result: dict, step: int = 0) -> list[bytes]:
    """result (a JSON object) as frames: "RMXF2 CRC RANK HOST STEP SEQ LAST PAYLOAD" padded to FRAME bytes."""
    data = base64.b64encode(zlib.compress(json.dumps(result).encode())).decode()
    head = f"{rank} {host} {step}"
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


def _frame(line: str) -> tuple[int, str, int, int, bool, str] | None:
    """(rank, host, step, seq, last, chunk) of one whole, intact frame, else None."""
    parts = line.rstrip().split(" ")
    if len(parts) != 7:
        return None
    crc, rank, host, step, seq, last, chunk = parts
    body = " ".join(parts[1:])
    try:
        if int(crc, 16) != zlib.crc32(body.encode()):
            return None
        return int(rank), host, int(step), int(seq), last == "1", chunk
    except ValueError:
        return None


class Reassembly:
    """The results of a job's frames by (rank, step), each complete once all its frames came."""

    def __init__(self):
        self.results: dict[Key, dict] = {}
        self._parts: dict[Key, dict] = {}

    def feed(self, text: str) -> list[Key]:
        """Read a piece of the job's output; returns the results it completed. Lines that are no
        frame (a launcher's own) are ignored."""
        done = []
        for line in text.splitlines():
            # a line may hold several frames (a newline lost) or the rest of one cut: each is tried
            for f in map(_frame, line.split(MAGIC + " ")[1:]):
                if f is None or (f[0], f[2]) in self.results:
                    continue
                rank, host, step, seq, last, chunk = f
                r = self._parts.setdefault((rank, step), {"host": host, "chunks": {}, "count": None})
                r["chunks"][seq] = chunk
                if last:
                    r["count"] = seq + 1
                if r["count"] is not None and len(r["chunks"]) == r["count"]:
                    try:
                        data = "".join(r["chunks"][i] for i in range(r["count"]))
                        self.results[(rank, step)] = json.loads(zlib.decompress(base64.b64decode(data)))
                    except (ValueError, KeyError, zlib.error):
                        continue   # left in part: reported broken unless a copy completes it
                    del self._parts[(rank, step)]
                    done.append((rank, step))
        return done

    def broken(self) -> dict[Key, str]:
        """The results that came in part only (a frame lost or cut): (rank, step) -> host."""
        return {key: r["host"] for key, r in self._parts.items()}

