"""Text files a user names (hostfiles, cluster.toml, HPL.dat): read whole, or refused
in one line: missing, a folder, a device, unreadable, too large, or not UTF-8 text;
and files rmax writes for users: whole or not at all, through no link another user
planted, never under /dev, /proc or /sys."""

from __future__ import annotations

import contextlib
import errno
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


KERNEL_TREES = (Path("/dev"), Path("/proc"), Path("/sys"))


def refuse_kernel_tree(path: str | Path, what: str) -> None:
    """Refuse a path under /dev, /proc or /sys, whether or not it exists, once `..` and links in its
    folder (and at its name) are resolved: rmax may run as root, and `--out /dev/sda` must not write
    a disk, nor create a file among the devices."""
    p = Path(path)
    for real in (Path(os.path.realpath(p.parent)) / p.name, Path(os.path.realpath(p))):
        tree = next((t for t in KERNEL_TREES if real == t or t in real.parents), None)
        if tree is not None:
            raise RmaxError(f"{what} {p} is under {tree}: rmax writes no device or kernel file",
                            hint="give a path in an ordinary folder")


def check_output(path: str | Path, what: str = "output file", make_parents: bool = False) -> Path:
    """A path rmax may write a file to: not empty, not under /dev, /proc or /sys, not a folder or a
    device, in a folder that exists (or that rmax creates, with make_parents)."""
    if not str(path):
        raise RmaxError(f"{what}: the path is empty")
    p = Path(path)
    refuse_kernel_tree(p, what)
    if p.exists() and not p.is_file():
        raise RmaxError(f"{what} {p} is {file_kind(p.stat().st_mode)}, not a regular file", hint="give a file name")
    _check_folders(p, what, make_parents)
    if p.exists() and not os.access(p, os.W_OK):
        raise RmaxError(f"cannot write {what} {p}: permission denied")
    if p.parent.is_dir():
        # Permissions do not tell everything (a read-only mount, root): create the file the write
        # will start from, and take it back, so that a path that cannot be written is refused
        # before any measuring.
        try:
            folder = os.open(p.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                fd, tmp = _create_temp(folder, p.name, 0o600)
                os.close(fd)
                os.unlink(tmp, dir_fd=folder)
            finally:
                os.close(folder)
        except OSError as e:
            raise RmaxError(f"cannot write {what} {p}: {e.strerror}") from None
    return p


def check_output_dir(path: str | Path, what: str = "output folder") -> Path:
    """A folder rmax may create (with its parents) or write into."""
    if not str(path):
        raise RmaxError(f"{what}: the path is empty")
    p = Path(path)
    refuse_kernel_tree(p, what)
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


def make_folder(path: str | Path, what: str = "folder", mode: int = 0o755) -> Path:
    """Create a folder rmax names itself (inside one the user gave), or accept one that is already
    there, never a link planted at its name: another user could point it at a folder of the victim's."""
    p = Path(path)
    try:
        os.mkdir(p, mode)
    except FileExistsError:
        pass
    except OSError as e:
        raise RmaxError(f"cannot create {what} {p}: {e.strerror}") from None
    st = os.lstat(p)
    if not stat.S_ISDIR(st.st_mode):
        raise RmaxError(f"{what} {p} is {'a link' if stat.S_ISLNK(st.st_mode) else file_kind(st.st_mode)}, "
                        "not a folder rmax made", hint="remove it or write elsewhere")
    return p


def make_folders(path: str | Path, what: str, mode: int) -> Path:
    """Create the folder a user named and whichever of its parents are missing, each with `mode`
    exactly (pathlib gives only the last one a mode, and the umask filters it); folders that exist
    are left as they are."""
    p = Path(path)
    for d in [*reversed([a for a in p.parents if not a.exists()]), p]:
        try:
            os.mkdir(d, 0o700)
            fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
        except FileExistsError:
            if not d.is_dir():
                raise RmaxError(f"cannot create {what} {p}: {d} is not a folder") from None
        except OSError as e:
            raise RmaxError(f"cannot create {what} {p}: {e.strerror}") from None
    return p


TEMP_TRIES = 16


def _token() -> str:
    """16 random hex digits: a temporary name's unguessable part (os.urandom, as the secrets module's)."""
    return os.urandom(8).hex()


def _create_temp(folder: int, name: str, mode: int) -> tuple[int, str]:
    """A new file beside `name` in the open folder: a name no one can guess in advance, created
    O_EXCL|O_NOFOLLOW, so that nothing planted there is ever opened."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(TEMP_TRIES):
        tmp = f".{name.encode()[:64].decode(errors='ignore')}.{_token()}.tmp"   # within NAME_MAX
        try:
            return os.open(tmp, flags, mode, dir_fd=folder), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name")


def write_atomic(path: str | Path, data: str | bytes, what: str = "file", mode: int = 0o644,
                 folder_is_ours: bool = False) -> Path:
    """Write `data` to `path` whole or not at all, and through no planted link: into a new file of
    an unguessable name beside it (see _create_temp), then renamed over the path, so that a link
    already at the path is replaced, not followed, and a full disk or a kill leaves the earlier
    file (or none), never half of one. The folder is opened once and every step is relative to it;
    with folder_is_ours (a folder rmax named, see make_folder) a link at its name is refused too.
    `mode` is filtered by the umask as usual."""
    p = Path(path)
    raw = data.encode() if isinstance(data, str) else data
    try:
        folder = os.open(p.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (os.O_NOFOLLOW if folder_is_ours else 0))
    except OSError as e:
        raise RmaxError(f"cannot write {what} {p}: {p.parent}: {e.strerror}") from None
    try:
        fd, tmp = _create_temp(folder, p.name, mode)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, p.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=folder)
            raise
    except OSError as e:
        raise RmaxError(f"cannot write {what} {p}: {e.strerror}") from None
    finally:
        os.close(folder)
    return p
