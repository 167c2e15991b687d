"""Where a spec points on this machine: the URLs and URIs it names (their characters, an http(s) server's
form, the MLflow tracking stores installed here) and the folders it writes (one this user can make and
write in, not a file or a folder of the kernel's). These checks read the host (the mount table, the
installed packages' entry points, the filesystem); the document's own shape is :mod:`rlsweep.spec`'s, which
asks them at validate, and so do the CLI's options and the API's overrides."""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from pathlib import Path
from urllib.parse import urlsplit

from rlsweep.errors import shorten


#: MLflow's own tracking stores (MLflow 3: ``mlflow/tracking/_tracking_service/utils.py``), by URI scheme:
#: a plain path ("") or file:, Databricks, Unity Catalog, an http(s) server, and a database through
#: SQLAlchemy (``postgresql+psycopg2://`` names a driver). A plugin may add more (below).
_MLFLOW_SCHEMES = frozenset({"", "file", "http", "https", "databricks", "databricks-uc", "uc"})
_MLFLOW_DATABASES = frozenset({"postgresql", "mysql", "sqlite", "mssql"})


#: Unicode's control characters (Cc: C0, DEL, C1), format characters (Cf: zero-width and bidi marks, which
#: show nothing) and lone surrogates (Cs: no encoding holds them); whitespace is ``str.isspace``.
_CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Cs"})


def url_text_problem(url: str, *, local_path: bool = False) -> str | None:
    """Why ``url`` holds a character no URL may, or None: a control character or whitespace. urllib drops
    a tab or a newline without a word (``http://host/\nHost: evil`` is read as ``http://host/Host: evil``),
    and a client may send the rest on as a line of its own.

    Args:
        local_path: ``url`` names a file or folder on this machine (``sqlite:///My Runs/mlflow.db``, a
            folder path): a space inside it is a name's, and is kept; at its start or end it is refused.
    """
    for position, char in enumerate(url):
        if local_path and char == " " and 0 < position < len(url) - 1:
            continue
        if char.isspace() or unicodedata.category(char) in _CONTROL_CATEGORIES:
            rule = ("a store's path holds no control character, and no whitespace but a space inside it" if local_path
                    else "a URL holds no control character or whitespace")
            return f"{rule}; got {shorten(url)}, with {char!r} at character {position}"
    return None


def http_url_problem(url: str) -> str | None:
    """Why ``url`` is not an http(s) URL with a host and a valid port, or None."""
    if problem := url_text_problem(url):
        return problem
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number from 0 to 65535
    except ValueError as exc:
        return f"is not a URL ({exc}): {shorten(url)}"
    if parts.scheme not in ("http", "https"):
        return f"must be an http(s) URL, got {shorten(url)}"
    if not parts.hostname:
        return f"names no host: {shorten(url)}"
    return None


def tracking_uri_problem(uri: str) -> str | None:
    """Why MLflow has no tracking store for ``uri``, or None. MLflow itself is not imported (a second of
    start-up): its schemes are listed above, and a plugin's are read from the installed packages' entry
    points only for a scheme not among them."""
    try:
        scheme = urlsplit(uri).scheme
    except ValueError as exc:
        return url_text_problem(uri) or f"is not a URI ({exc}): {shorten(uri)}"
    if problem := url_text_problem(uri, local_path=is_local_store(scheme)):
        return problem
    if len(scheme) == 1:  # C:\mlruns: a Windows drive, a plain path to MLflow
        return None
    if scheme in ("http", "https"):
        return http_url_problem(uri)
    database, plus, driver = scheme.partition("+")
    if database in _MLFLOW_DATABASES and "+" not in driver and (driver or not plus):
        return None
    if scheme in _MLFLOW_SCHEMES:
        return None
    from importlib.metadata import entry_points

    if scheme in {entry.name for entry in entry_points(group="mlflow.tracking_store")}:
        return None
    return (f"has the scheme {scheme!r}, which MLflow has no tracking store for; use a folder path, "
            f"sqlite:///mlflow.db, postgresql://, mysql://, mssql://, http(s)://host:port or databricks; got {shorten(uri)}")


def is_local_store(scheme: str) -> bool:
    """Whether a tracking URI of ``scheme`` names a file or folder of this machine (a path, file:, SQLite)."""
    return len(scheme) <= 1 or scheme == "file" or scheme.partition("+")[0] == "sqlite"


def storage_problem(storage: str) -> str | None:
    """Why ``storage`` cannot hold sweeps, or None. rlsweep writes and reads its experiment directories with
    local file operations, so a URI (``s3://bucket``) would become a local folder named ``s3:``; on a
    cluster, storage is a shared filesystem mounted at the same path on every node."""
    if "://" in storage:
        return (f"must be a folder path, not a URI (on a multi-node cluster, a shared filesystem such as NFS "
                f"mounted at the same path on every node), got {shorten(storage)}")
    return folder_problem(storage)


#: Filesystems of the kernel's own (``/proc``, ``/sys``, ...) where no folder can be made or written.
_KERNEL_FILESYSTEMS = frozenset({
    "proc", "sysfs", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "configfs", "pstore", "bpf",
    "efivarfs", "fusectl", "binfmt_misc", "devpts", "mqueue", "autofs",
})


def folder_problem(folder: str) -> str | None:
    """Why ``folder`` is not a folder rlsweep can write in, and cannot be made one, or None. Creates nothing:
    it walks up to the first ancestor that exists, which must be a writable folder (not a file, a device,
    or a folder of the kernel's such as ``/proc``)."""
    if "\0" in folder:
        return f"is not a path (it holds a NUL character): {shorten(folder)}"
    try:
        path = Path(os.path.abspath(Path(folder).expanduser()))
    except (RuntimeError, OSError) as exc:  # ~nosuchuser; a working directory that is gone
        return f"is not a path this machine can resolve ({exc}): {shorten(folder)}"
    existing = path
    while True:
        try:
            mode = os.stat(existing).st_mode
            break
        except (FileNotFoundError, NotADirectoryError):  # missing, or below a file: look further up
            if existing.parent == existing:
                return f"has no existing folder above it: {shorten(folder)}"
            existing = existing.parent
        except OSError as exc:  # a loop of symlinks, a name too long, a folder it may not look in
            return f"cannot be used as a folder ({exc.strerror or exc}): {shorten(folder)}"
    if not stat.S_ISDIR(mode):
        kind = _FILE_KINDS.get(stat.S_IFMT(mode), "a file")
        if existing == path:
            return f"is {kind}, not a folder: {shorten(folder)}"
        return f"cannot be made: {shorten(str(existing))} above it is {kind}, not a folder (storage {shorten(folder)})"
    filesystem = _filesystem_of(existing)
    if filesystem in _KERNEL_FILESYSTEMS:
        return (f"is on the kernel's {filesystem} filesystem ({shorten(str(existing))}), where no experiment "
                f"folder can be written: {shorten(folder)}")
    if not os.access(existing, os.W_OK | os.X_OK):
        if existing == path:
            return f"is a folder this user cannot write in: {shorten(folder)}"
        return f"cannot be made: this user cannot write in {shorten(str(existing))} (storage {shorten(folder)})"
    return None


_FILE_KINDS = {
    stat.S_IFREG: "a file", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe", stat.S_IFSOCK: "a socket",
}


def _filesystem_of(folder: Path) -> str | None:
    """The type of the filesystem ``folder`` (resolved, existing) is on, from the mount table (Linux), or
    None where there is none to read."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:  # not Linux: only the usual places of the kernel's filesystems
        return next((name for root, name in (("/proc", "proc"), ("/sys", "sysfs"))
                     if folder.resolve().is_relative_to(root)), None)
    resolved, best, found = folder.resolve(), -1, None
    for line in lines:
        fields, _, after = line.partition(" - ")
        parts = fields.split()
        if len(parts) < 5 or not after:
            continue
        # Mount points escape a space, tab, newline and backslash as octal (\040).
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), parts[4])
        if resolved.is_relative_to(point) and len(point) >= best:
            best, found = len(point), after.split()[0]
    return found

