"""Reading and writing files someone else may have made: capped, regular files only, strict JSON.

Every reader of the package (records CSVs, releases, models) goes through :func:`read_bytes`,
and every JSON document through :func:`loads_json`; every writer checks its target with
:func:`check_output_file` / :func:`check_output_dir` before any work starts.  Each raises
:class:`~aggmrf_explore.errors.AggMRFError` with a message that names the file (never its
contents) and says what to do.

* The output checks are one rule for every command that writes files: a target is never a
  device, FIFO, socket or directory; never one of the command's own inputs (declared with
  :func:`command_inputs`, as the command line does for every input flag), nor an existing
  file inside an input directory; never a symlink (:func:`create_file` never writes through
  one).  A name that means "here" or the root (``''``, ``.``, ``..``-only paths, ``/``, any
  path resolving to the current directory or ``/``) or that lies under ``/dev``, ``/proc``
  or ``/sys`` is refused (:func:`check_output_name`).  Directories are never created.

* :func:`create_file` is how every file is written (:func:`write_bytes` /
  :func:`write_text` for data already in memory): a temporary file with an unpredictable
  name (``.NAME.<random>.tmp``) is created exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``)
  in the target's directory, opened once (every step relative to that directory's file
  descriptor, so a directory swapped for a link mid-way changes nothing), written, then
  renamed over the final name (``os.replace``: atomic, and a rename never follows a link).
  A final name that is a symbolic link is refused with one error (checked again just before
  the rename); a link planted between that check and the rename is replaced, never
  written through.  ``replace_link=True`` (the lessons with ``--force``) replaces such a
  link instead of refusing.  Permissions are those of a plain ``open`` (0666 less the
  umask); a hard link at the final name keeps the other name's contents.

* :func:`read_bytes` refuses anything that is not a regular file (a directory, a FIFO, a
  device such as ``/dev/zero``, a socket) *before* reading, opens with ``O_NONBLOCK`` so that
  a FIFO swapped in at the last moment cannot block, and reads at most ``max_bytes`` bytes.
* :func:`loads_json` rejects the non-standard constants ``NaN``, ``Infinity``,
  ``-Infinity`` and duplicate keys, and reports decoding errors (not UTF-8) as such.
* :func:`decode_text` turns bytes into text: UTF-8 (BOM or not), UTF-16 with a BOM, else
  Latin-1.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from pathlib import Path

from .errors import AggMRFError

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_CSV_BYTES",
    "read_bytes",
    "decode_text",
    "loads_json",
    "read_json",
    "check_regular_file",
    "check_output_file",
    "check_output_dir",
    "check_output_name",
    "command_inputs",
    "create_file",
    "write_bytes",
    "write_text",
    "mib",
]

MAX_JSON_BYTES = 256 * 2**20  # release.json, model files and schema files: 256 MiB
MAX_CSV_BYTES = 2 * 2**30  # a records CSV: 2 GiB (the size budget refuses big tables first)


def mib(n: int) -> str:
    """``n`` bytes in MiB, for messages (e.g. "3.2 MiB")."""
    return f"{n / 2**20:.3g} MiB"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_regular_file(path: str | Path, what: str, shown: str | None = None) -> os.stat_result:
    """Stat ``path`` (following symlinks) and raise unless it is an existing regular file.

    ``what`` says what the file is in messages (e.g. "model file"), ``shown`` how to name
    it (default: its path, quoted).  Returns the stat result.
    """
    p = Path(path)
    shown = shown if shown is not None else repr(str(p))
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise AggMRFError(f"{what} not found: {shown}; check the path.") from None
    except PermissionError:
        raise AggMRFError(
            f"{what} {shown} cannot be read (permission denied); check its permissions."
        ) from None
    except OSError as e:
        raise AggMRFError(f"{what} {shown} cannot be read ({e.strerror}).") from None
    if not stat.S_ISREG(st.st_mode):
        hint = " give the path of a file inside it" if stat.S_ISDIR(st.st_mode) else ""
        raise AggMRFError(
            f"{what} {shown} is {_kind(st.st_mode)}, not a regular file;"
            + (hint or " give the path of a regular file")
            + "."
        )
    return st


def read_bytes(path: str | Path, what: str, max_bytes: int, shown: str | None = None) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them.

    Refused (AggMRFError): a missing path, a directory / FIFO / device / socket (checked
    before opening; the open is non-blocking and re-checked with ``fstat``), a file larger
    than ``max_bytes`` (the message gives both sizes).  ``what`` says what the file is in
    messages, ``shown`` how to name it (default: its path, quoted).
    """
    p = Path(path)
    shown = shown if shown is not None else repr(str(p))
    check_regular_file(p, what, shown)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except PermissionError:
        raise AggMRFError(
            f"{what} {shown} cannot be read (permission denied); check its permissions."
        ) from None
    except OSError as e:
        raise AggMRFError(f"{what} {shown} cannot be opened ({e.strerror}).") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise AggMRFError(f"{what} {shown} is {_kind(st.st_mode)}, not a regular file.")
        if st.st_size > max_bytes:
            raise AggMRFError(
                f"{what} {shown} is {mib(st.st_size)}, more than the {mib(max_bytes)} "
                "allowed for it; check that it is the right file."
            )
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise AggMRFError(
                    f"{what} {shown} is larger than the {mib(max_bytes)} allowed for it; "
                    "check that it is the right file."
                )
        return b"".join(chunks)
    except OSError as e:
        raise AggMRFError(f"{what} {shown} cannot be read ({e.strerror}).") from None
    finally:
        os.close(fd)


def decode_text(raw: bytes, what: str, *, fallback_latin1: bool = True) -> str:
    """Text of a file's bytes: UTF-8 (with or without BOM), UTF-16 / UTF-32 with a BOM,
    else Latin-1 (``fallback_latin1``) or an error saying the file is not UTF-8."""
    if raw[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff"):
        enc = "utf-32"
    elif raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        enc = "utf-16"
    else:
        enc = "utf-8-sig"
    try:
        return raw.decode(enc)
    except UnicodeDecodeError as e:
        if enc == "utf-8-sig" and fallback_latin1:
            return raw.decode("latin-1")
        label = "UTF-8" if enc == "utf-8-sig" else enc.upper()
        raise AggMRFError(
            f"{what} is not valid {label} text (byte {e.start}); save it as UTF-8."
        ) from None


class _Constant:
    """Stands for NaN / Infinity while parsing, so that the error can say where it was."""

    def __init__(self, name: str) -> None:
        self.name = name


def _find_constant(value: object, path: str = "") -> tuple[str, str] | None:
    """(where, constant) of the first :class:`_Constant` in a parsed JSON value."""
    stack = [(value, path)]
    while stack:
        v, at = stack.pop()
        if isinstance(v, _Constant):
            return at or "(top level)", v.name
        if isinstance(v, dict):
            stack.extend((x, f"{at}.{k[:40]}" if at else k[:40]) for k, x in reversed(v.items()))
        elif isinstance(v, list):
            stack.extend((x, f"{at}[{i}]") for i, x in reversed(list(enumerate(v))))
    return None


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"the key {k[:40]!r} twice in one object")
        out[k] = v
    return out


MAX_JSON_DEPTH = 200  # our files nest 5 deep; the C parser's recursion may not be trusted


def _nesting_depth(text: str) -> int:
    """An upper bound of the bracket nesting of a JSON text (brackets inside strings count
    too), computed without recursion: ``json.loads`` on 10⁵ nested brackets can overflow
    the C stack (a segmentation fault) when the recursion limit has been raised."""
    import numpy as np

    codes = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    steps = np.zeros(codes.size, dtype=np.int32)
    steps[(codes == ord("[")) | (codes == ord("{"))] = 1
    steps[(codes == ord("]")) | (codes == ord("}"))] = -1
    return int(np.cumsum(steps).max(initial=0))


def loads_json(text: str | bytes, what: str) -> object:
    """Parse strict JSON: no NaN / Infinity constants, no duplicate keys, UTF-8 (or UTF-16
    with a BOM) when given bytes.  ``what`` names the document in messages."""
    if isinstance(text, bytes):
        text = decode_text(text, what, fallback_latin1=False)
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise AggMRFError(f"{what} is empty; it should hold a JSON object.")
    if _nesting_depth(text) > MAX_JSON_DEPTH:
        raise AggMRFError(f"{what} is nested too deeply to be a valid file.")
    try:
        value = json.loads(text, parse_constant=_Constant, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as e:
        raise AggMRFError(
            f"{what} is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg}); "
            "check that the file is the one written by aggmrf-explore."
        ) from None
    except ValueError as e:
        raise AggMRFError(f"{what} is not valid JSON: it has {e}.") from None
    except RecursionError:
        raise AggMRFError(f"{what} is nested too deeply to be a valid file.") from None
    bad = _find_constant(value)
    if bad is not None:
        raise AggMRFError(
            f"{what}: {bad[0]} is {bad[1]}, which is not a JSON number (numbers must be finite); "
            "fix or regenerate the file."
        )
    return value


def read_json(path: str | Path, what: str, max_bytes: int = MAX_JSON_BYTES) -> object:
    """:func:`read_bytes` + :func:`loads_json`; ``what`` names the file in messages."""
    p = Path(path)
    return loads_json(read_bytes(p, what, max_bytes), f"{what} {p.name!r}")


_INPUTS: ContextVar[tuple[str, ...]] = ContextVar("aggmrf_command_inputs", default=())


@contextlib.contextmanager
def command_inputs(paths: Iterable[str | os.PathLike | None]) -> Iterator[None]:
    """Within the block, :func:`check_output_file` and :func:`check_output_dir` refuse to
    write over any of ``paths`` (the files and directories a command reads; None entries
    are skipped) or over an existing file inside one of those directories."""
    token = _INPUTS.set(tuple(os.path.realpath(os.fspath(p)) for p in paths if p))
    try:
        yield
    finally:
        _INPUTS.reset(token)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _input_hit(real: str, exists: bool, inputs: Iterable[str | os.PathLike]) -> str | None:
    """The input that writing ``real`` (a resolved path) would overwrite, or None."""
    for raw in (*_INPUTS.get(), *(os.path.realpath(os.fspath(i)) for i in inputs if i)):
        if real == raw or (exists and _same_file(real, raw)):
            return raw
        if exists and os.path.isdir(raw) and os.path.dirname(real) == raw:
            return raw
    return None


def _check_target(p: Path, what: str, inputs: Iterable[str | os.PathLike]) -> None:
    """The rules every output path follows (module docstring): symlinks stay in their
    directory, an existing target is a regular file, no input is overwritten."""
    shown = repr(str(p))
    if p.is_symlink():
        raise AggMRFError(
            f"{what} {shown} is a symlink (a symbolic link); files are never written through "
            "a link — remove the link or give the path of the file it points to."
        )
    try:
        st = os.stat(p)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise AggMRFError(f"{what} {shown} is a directory; give a file name.")
        raise AggMRFError(
            f"{what} {shown} is {_kind(st.st_mode)}, not a regular file; give the path of a "
            "file in an existing directory."
        )
    hit = _input_hit(os.path.realpath(p), st is not None, inputs)
    if hit is not None:
        raise AggMRFError(
            f"{what} {shown} would overwrite one of this command's inputs "
            f"({os.path.basename(hit) or hit!r}); choose another name."
        )


def check_output_file(
    path: str | Path,
    what: str,
    suffixes: tuple[str, ...] = (),
    inputs: Iterable[str | os.PathLike] = (),
) -> Path:
    """Before any work: ``path`` can be written as a file (its directory exists, it is not
    a directory, the suffix is one of ``suffixes`` if given) and follows the output rules
    of the module docstring (``inputs``: paths read by the caller, besides those of
    :func:`command_inputs`).  Directories are never created.  Returns the path."""
    p = check_output_name(path, what)
    if suffixes and p.suffix.lower() not in suffixes:
        raise AggMRFError(
            f"{what} {str(p)!r} must end in {' or '.join(suffixes)}; got {p.suffix or 'no suffix'!r}."
        )
    parent = p.parent if str(p.parent) else Path(".")
    _check_target(p, what, inputs)
    if not parent.is_dir():
        raise AggMRFError(
            f"{what}: the directory {str(parent)!r} does not exist; create it first "
            f"(mkdir -p {str(parent)!r}) or choose another path."
        )
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise AggMRFError(f"{what} {str(p)!r} cannot be written (permission denied).")
    return p


def check_output_dir(path: str | Path, what: str, inputs: Iterable[str | os.PathLike] = ()) -> Path:
    """Before any work: ``path`` is an existing directory or can be created as one (its
    parent exists; parents are never created), and is not one of the inputs (``inputs``
    and those of :func:`command_inputs`) nor a name :func:`check_output_name` refuses.
    Returns the path."""
    p = check_output_name(path, what)
    if p.exists() and not p.is_dir():
        kind = "a file" if p.is_file() else _kind(os.stat(p).st_mode)
        raise AggMRFError(
            f"{what} {str(p)!r} exists and is {kind}, not a directory; choose another path."
        )
    real = os.path.realpath(p)
    for raw in (*_INPUTS.get(), *(os.path.realpath(os.fspath(i)) for i in inputs if i)):
        if real == raw:
            raise AggMRFError(
                f"{what} {str(p)!r} is one of this command's inputs; write to another directory."
            )
    parent = p.parent if str(p.parent) else Path(".")
    if not p.exists() and not parent.is_dir():
        raise AggMRFError(
            f"{what}: the directory {str(parent)!r} does not exist; create it first "
            f"(mkdir -p {str(parent)!r}) or choose another path."
        )
    target = p if p.exists() else parent
    if not os.access(target, os.W_OK):
        raise AggMRFError(f"{what} {str(p)!r} cannot be written (permission denied).")
    return p


_SYSTEM_TREES = ("/dev", "/proc", "/sys")


def check_output_name(path: str | os.PathLike, what: str) -> Path:
    """Refuse an output name that means "here" or the root, or names a device: ``''``,
    ``.``, ``/``, any path resolving to the current directory or to ``/`` (``./``, ``a/..``,
    ``$PWD``), and anything under ``/dev``, ``/proc`` or ``/sys`` (``/dev/null``,
    ``/dev/stdout``).  ``what`` names the flag in the message.  Returns the path."""
    text = os.fspath(path)
    shown = repr(text)
    if not text.strip():
        raise AggMRFError(f"{what} is empty; give the name of a file or directory of yours.")
    real = os.path.realpath(text)
    if real == os.path.realpath(os.curdir):
        raise AggMRFError(
            f"{what} {shown} is the current directory; give a name inside it, such as "
            f"{os.path.join(text, 'results')!r}."
        )
    if real == os.path.realpath(os.sep) or os.path.abspath(text) == os.sep:
        raise AggMRFError(f"{what} {shown} is the root directory; give a directory of yours.")
    for tree in _SYSTEM_TREES:
        for p in (os.path.abspath(text), real):
            if p == tree or p.startswith(tree + os.sep):
                raise AggMRFError(
                    f"{what} {shown} names a device or system file ({tree}); give a file in a "
                    "directory of yours."
                )
    return Path(text)


def _final_state(name: str, dfd: int, shown: str, what: str, replace_link: bool) -> None:
    """Refuse a final name that is a link (unless ``replace_link``) or not a regular file."""
    try:
        st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        if replace_link:
            return
        raise AggMRFError(
            f"{what} {shown} is a symlink (a symbolic link); files are never written through "
            "a link — remove the link or give the path of a regular file."
        )
    if not stat.S_ISREG(st.st_mode):
        raise AggMRFError(
            f"{what} {shown} is {_kind(st.st_mode)}, not a regular file; give the path of a "
            "file in an existing directory."
        )


def _temp_name(name: str) -> str:
    """An unpredictable hidden name beside ``name`` (at most 255 bytes)."""
    stem = name.encode("utf-8", "surrogateescape")[:200].decode("utf-8", "ignore")
    return f".{stem}.{secrets.token_hex(8)}.tmp"


@contextlib.contextmanager
def create_file(
    path: str | os.PathLike,
    what: str = "output file",
    *,
    binary: bool = False,
    encoding: str = "utf-8",
    newline: str | None = None,
    replace_link: bool = False,
) -> Iterator[io.IOBase]:
    """Write ``path`` safely (module docstring): yields a file object open for writing
    (text in ``encoding``, or bytes with ``binary=True``) on a fresh temporary file in the
    same directory; when the block ends without error it is renamed over ``path``,
    otherwise it is removed and ``path`` is left as it was.  Raises
    :class:`AggMRFError` (naming ``what`` and the path) when the name is refused, the final
    name is a link (unless ``replace_link``) or not a regular file, or the directory cannot
    be written."""
    p = Path(path)
    shown = repr(str(p))
    name = p.name
    if not name or name in (".", ".."):
        raise AggMRFError(f"{what} {shown} names a directory; give a file name.")
    parent = os.fspath(p.parent) if str(p.parent) else os.curdir
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        dfd = os.open(parent, flags)
    except OSError as e:
        raise AggMRFError(
            f"{what} {shown}: its directory {parent!r} cannot be opened ({e.strerror}); "
            "create it first or choose another path."
        ) from None
    tmp = None
    try:
        _final_state(name, dfd, shown, what, replace_link)
        create = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(16):
            candidate = _temp_name(name)
            try:
                fd = os.open(candidate, create, 0o666, dir_fd=dfd)
            except FileExistsError:
                continue  # (someone's file or link at that name: never opened, try another)
            tmp = candidate
            break
        else:
            raise AggMRFError(
                f"{what} {shown}: no temporary file could be created beside it (every name "
                "tried exists); check who else writes into that directory."
            )
        mode = "wb" if binary else "w"
        kw = {} if binary else {"encoding": encoding, "newline": newline}
        with os.fdopen(fd, mode, **kw) as fh:
            yield fh
        _final_state(name, dfd, shown, what, replace_link)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        tmp = None
    except PermissionError:
        raise AggMRFError(f"{what} {shown} cannot be written (permission denied).") from None
    except OSError as e:
        raise AggMRFError(f"{what} {shown} cannot be written ({e.strerror or e}).") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
        os.close(dfd)


def write_bytes(
    path: str | os.PathLike, data: bytes, what: str = "output file", **kw: bool
) -> Path:
    """Write ``data`` to ``path`` through :func:`create_file`; returns the path."""
    with create_file(path, what, binary=True, **kw) as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | os.PathLike, text: str, what: str = "output file", **kw: bool) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through :func:`create_file`; returns the path."""
    with create_file(path, what, **kw) as fh:
        fh.write(text)
    return Path(path)
