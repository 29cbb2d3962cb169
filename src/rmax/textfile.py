"""Text files a user names (hostfiles, cluster.toml, HPL.dat): read whole, or refused
in one line: missing, a folder, a device, unreadable, too large, or not UTF-8 text;
and files rmax writes for users, whole or not at all."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rmax.errors import RmaxError

MAX_BYTES = 16 << 20   # the largest input rmax reads: far above any hostfile or HPL.dat


def check_input(path: str | Path, what: str = "file") -> Path:
    """The path of an existing, readable regular file, or one RmaxError that says why not."""
    if not str(path):
        raise RmaxError(f"{what}: the path is empty")
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise RmaxError(f"cannot read {what} {p}: not found") from None
    except OSError as e:
        raise RmaxError(f"cannot read {what} {p}: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise RmaxError(f"{what} {p} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise RmaxError(f"{what} {p} is not a regular file")
    if st.st_size > MAX_BYTES:
        raise RmaxError(f"{what} {p} is {st.st_size} bytes: larger than the {MAX_BYTES >> 20} MiB rmax reads")
    if not os.access(p, os.R_OK):
        raise RmaxError(f"cannot read {what} {p}: permission denied")
    return p


def read_text(path: str | Path, what: str = "file") -> str:
    """The UTF-8 text of a user's file."""
    p = check_input(path, what)
    try:
        data = p.read_bytes()
    except OSError as e:
        raise RmaxError(f"cannot read {what} {p}: {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RmaxError(f"{what} {p} is not UTF-8 text (byte {e.start} is 0x{data[e.start]:02x})") from None
    if "\0" in text:
        raise RmaxError(f"{what} {p} is not a text file (it holds NUL bytes)")
    return text


def _check_folders(p: Path, what: str, make_parents: bool) -> None:
    """The folder p goes into must exist (or, with make_parents, its nearest existing ancestor must
    be a folder) and be writable."""
    if not make_parents and not p.parent.is_dir():
        raise RmaxError(f"cannot create {what} {p}: folder {p.parent} does not exist")
    existing = next((a for a in p.parents if a.exists()), None)
    if existing is not None and not existing.is_dir():
        raise RmaxError(f"cannot create {what} {p}: {existing} is not a folder")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise RmaxError(f"cannot write {what} {p}: permission denied")


FILE_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
              (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))


def file_kind(mode: int) -> str:
    """'a directory', 'a character device', ... for what is not a regular file."""
    return next((name for test, name in FILE_KINDS if test(mode)), "not a regular file")


def check_output(path: str | Path, what: str = "output file", make_parents: bool = False) -> Path:
    """A path rmax may write a file to: not empty, not a folder or a device, in a folder that exists
    (or that rmax creates, with make_parents). A device is refused because rmax may run as root:
    `--out /dev/sda` must not write a disk."""
    if not str(path):
        raise RmaxError(f"{what}: the path is empty")
    p = Path(path)
    if p.exists() and not p.is_file():
        raise RmaxError(f"{what} {p} is {file_kind(p.stat().st_mode)}, not a regular file", hint="give a file name")
    _check_folders(p, what, make_parents)
    if p.exists() and not os.access(p, os.W_OK):
        raise RmaxError(f"cannot write {what} {p}: permission denied")
    if not p.exists() and p.parent.is_dir():
        # Permissions do not tell everything (/proc, a read-only mount, root): create it and take
        # it back, so that a path that cannot be written is refused before any measuring.
        try:
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            os.unlink(p)
        except OSError as e:
            raise RmaxError(f"cannot write {what} {p}: {e.strerror}") from None
    return p


def check_output_dir(path: str | Path, what: str = "output folder") -> Path:
    """A folder rmax may create (with its parents) or write into."""
    if not str(path):
        raise RmaxError(f"{what}: the path is empty")
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise RmaxError(f"{what} {p} exists and is not a folder")
    if p.is_dir():
        if not os.access(p, os.W_OK | os.X_OK):
            raise RmaxError(f"cannot write {what} {p}: permission denied")
        return p
    _check_folders(p, what, make_parents=True)
    try:        # made now, so that a folder that cannot be made is refused before any measuring
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RmaxError(f"cannot create {what} {p}: {e.strerror}") from None
    return p


def write_atomic(path: str | Path, text: str, what: str = "file") -> Path:
    """Write `text` to `path` whole or not at all: into a temporary file beside it, then renamed
    over it, so that a full disk or a kill leaves the earlier file (or none), never half of one."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except OSError as e:
        raise RmaxError(f"cannot write {what} {p}: {e.strerror}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return p
